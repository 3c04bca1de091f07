// Package explain answers the questions behind `dovetail explain`: why a
// pod is pending (or where it went), and why a NodeClaim was launched on
// the instance type it has. It is pure: it takes the engine's input built
// from a snapshot (pkg/snapshot), the nominations the provisioner recorded,
// and returns explanations as values with a JSON shape and a text
// rendering. No API client, no cloud, no clock.
//
// Pod: for a pending pod the engine's own verdict (engine.Solve on the
// whole snapshot: it may be placed, or it gets the engine's reason code),
// then for every existing node and every NodePool the first rule that
// keeps it out, with counts across instance types ("412 types: 300 too
// small for cpu (needs 7.5, largest allowed 4), 100 kubernetes.io/arch not
// in [arm64], 12 no offering in zones [us-east-1c]"), taints not
// tolerated, limits reached, offerings held unavailable, and what would make
// it schedulable. For a bound pod: its node, the node's NodeClaim, the
// target the provisioner nominated it to, and whether kube-scheduler
// followed it.
//
// NodeClaim: the instance types it could launch as, the offering it
// launched on and its $/h (recorded at launch in dovetail.sh/offering and
// dovetail.sh/price-per-hour), and every cheaper offering of its pool with
// the reason it was not taken (too small, a requirement, zone, capacity
// type, unavailable, minValues).
//
// What must not live here: reading the cluster or files (internal/cli/
// explain, pkg/clusterdump, pkg/simulate), and the disruption planner's
// reasons (`explain node` is not implemented yet).
package explain
