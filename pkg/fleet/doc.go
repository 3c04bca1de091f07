// Package fleet is the per-node view of a cluster that `dovetail cost` and
// `dovetail top` print: for every node (and every NodeClaim still
// launching) its pool, instance type, capacity type, zone, $/h and how much
// of its cpu and memory the pods request, and totals grouped by pool or by
// a NodePool label.
//
// Prices come from what the controller recorded on the NodeClaim at launch
// (dovetail.sh/price-per-hour); a node without one (launched by another
// autoscaler or by hand) is priced from the built-in catalog by its
// well-known labels (node.kubernetes.io/instance-type, karpenter.sh/
// capacity-type or eks.amazonaws.com/capacityType, topology.kubernetes.io/
// zone), and its PriceSource says so.
//
// Pure: objects in, rows out; no client, no clock.
package fleet
