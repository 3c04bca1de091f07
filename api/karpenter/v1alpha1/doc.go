// Package v1alpha1 holds the karpenter.sh/v1alpha1 API type dovetail
// installs beside karpenter.sh/v1: NodeOverlay, field for field the peer's
// v1.15 CRD, so that manifests written for the peer apply unchanged.
//
// # Vocabulary
//
//   - NodeOverlay: adjustments to the instance types whose labels match its
//     requirements, applied in scheduling simulations: a price (or a price
//     adjustment, fixed or in percent) and extended-resource capacity. The
//     overlay with the higher weight wins.
//
// # Status in dovetail
//
// The CRD is installed and validated (OpenAPI and CEL rules generated from
// the markers here), but dovetail does not apply overlays yet: with the
// NodeOverlay feature gate off (its default, and the peer's) they are
// ignored, as the peer ignores them with the gate off. docs/api.md says so.
//
// # What does not live here
//
// No client code and no business logic; controllers and the scheduling core
// import this package, never the other way round.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
