// Package cloudprovider is the seam between dovetail and a cloud: the
// instance-type model the decision core reasons about, and the CloudProvider
// interface the controllers call.
//
// # Vocabulary
//
//   - InstanceType: a launchable machine shape (e.g. m7g.large) with the
//     single-valued labels every node of it carries, its capacity, the
//     Overhead the node keeps for itself, and its Offerings.
//   - Offering: the shape sold in one zone at one capacity type (spot,
//     on-demand, reserved) at a price, available or not right now.
//   - OfferingKey: (instance type, zone, capacity type), the unit in which
//     insufficient capacity is reported and remembered.
//
// # Error contract
//
// Methods return typed errors, matched with errors.As or the helpers
// IsInsufficientCapacity, IsNodeClaimNotFound, IsNodeClassNotReady:
//
//   - *InsufficientCapacityError: no allowed offering had capacity; retry
//     with what remains.
//   - *NodeClaimNotFoundError: the instance is gone; for Delete that means
//     done.
//   - *NodeClassNotReadyError: the node class is not resolved yet; requeue.
//   - *CreateError: another launch failure, with a reason for conditions.
//
// # What must not live here
//
// Nothing cloud-specific: AWS lives in pkg/providers/aws. The package holds
// data types and the interface only; fake holds an in-memory implementation
// for tests of dovetail's own controllers (never a fake of a cloud SDK).
package cloudprovider
