// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 API type dovetail
// installs because the peer's v1.15 chart does: CapacityBuffer, field for
// field the CRD the peer ships, so that manifests written for the peer apply
// unchanged.
//
// # Vocabulary
//
//   - CapacityBuffer: spare capacity an autoscaler keeps provisioned ahead of
//     demand, described as a number of chunks, each shaped like a pod (from a
//     PodTemplate, or from a scalable object such as a Deployment), bounded by
//     replicas, a percentage of the scalable object's replicas, or resource
//     limits.
//
// # Status in dovetail
//
// The CRD is installed and validated (OpenAPI and CEL rules generated from
// the markers here), but dovetail does not provision buffers yet: with the
// CapacityBuffer feature gate off (its default, and the peer's) they are
// ignored, as the peer ignores them with the gate off. docs/api.md says so.
//
// # What does not live here
//
// No client code and no business logic.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
