// Package capacitybuffer resolves CapacityBuffers (autoscaling.x-k8s.io,
// the CapacityBuffer feature gate) into their status: the shape of one
// chunk (status.podTemplateRef, status.podTemplateGeneration), how many
// chunks (status.replicas) and the ReadyForProvisioning condition.
//
// # How a buffer resolves
//
//   - spec.podTemplateRef: the named PodTemplate of the buffer's
//     namespace is the shape; status.podTemplateRef names it.
//   - spec.scalableRef (apps Deployment, ReplicaSet or StatefulSet): the
//     object's pod template is the shape. The controller keeps a copy in a
//     PodTemplate named "<buffer>-capacitybuffer", owned by the buffer (so
//     it goes when the buffer goes), and status.podTemplateRef names that
//     copy: provisioning and disruption read only buffers and
//     PodTemplates, whatever the buffer refers to.
//   - The count is snapshot.BufferCount's (replicas and percentage of the
//     scalable's replicas, the larger; limits cap it).
//
// A missing template or scalable, an unsupported kind or group, a
// percentage over 100 or a count over engine.MaxBufferPods give
// ReadyForProvisioning=False with a reason (PodTemplateNotFound,
// ScalableRefNotFound, ResolutionFailed) and a message naming the field;
// status.replicas is cleared, so no room is kept for it, and nothing else
// changes. Buffers with a provisioningStrategy other than
// buffer.x-k8s.io/active-capacity belong to another autoscaler and are
// left alone.
//
// # What it leaves to others
//
// The room itself is provisioning's: it plans status.replicas pods of the
// template as engine.Buffer (virtual pods, never Pod objects), launches
// NodeClaims for what does not fit, and writes the Provisioning condition.
// The disruption planner keeps empty nodes that hold the room (code
// CapacityBuffer). This controller writes Provisioning only when there is
// nothing to provision (NotReadyForProvisioning, BufferEmpty).
//
// # Must not
//
// Plan capacity, create NodeClaims or Pods, sleep, or keep state in
// memory: everything it decides is in the buffer's status.
package capacitybuffer
