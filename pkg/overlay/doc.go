// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to the
// instance types a NodePool may launch: the pure stage between a source of
// instance types (the catalog, the cloud provider) and the scheduling
// engine, shared by provisioning, the disruption planner, `simulate` and
// the NodeOverlay status controller, so they all see the same adjusted
// prices and capacity.
//
// # Rules
//
//   - An overlay matches an offering when its requirements match the labels
//     a node of that offering would carry: the instance type's labels, the
//     NodePool's template labels, karpenter.sh/nodepool,
//     karpenter.k8s.aws/ec2nodeclass, and the offering's zone, zone id and
//     capacity type. An instance type matches when one of its offerings
//     does.
//   - Overlays are taken in weight order (higher first; unset counts as 0;
//     equal weights by name, the later name first, as the peer). For each
//     offering the first overlay that sets a price wins (price replaces,
//     priceAdjustment changes the catalog price by an amount or a
//     percentage); for each extended resource the first overlay that sets
//     it wins. Adjustments never stack.
//   - Two overlays of equal weight that both match an offering and set its
//     price, or both set one resource on a matched type, conflict: the one
//     taken second is not applied at all and gets the Conflict verdict.
//   - An overlay that cannot be parsed (requirements, price,
//     priceAdjustment, capacity) or whose price would be negative (or not
//     finite) for an offering it matches is not applied at all, with a
//     verdict naming the field. An overlay is applied whole or not at all.
//   - Work and memory are bounded: NodePools are grouped by whether each
//     overlay requirement on a pool label passes (group), overlays are
//     matched once per group and instance type (requirements on type
//     labels once per type, on zone and capacity type once per offering),
//     a group's pools share their adjusted types, and an overlay that
//     would take the adjusted types past MaxAdjustedTypes is not applied
//     (TooManyAdjustedTypes).
//
// Apply never modifies its input: adjusted instance types are new values
// (labels and overhead shared, capacity and offerings copied); types no
// overlay touches are returned as they were.
//
// What must not live here: reading the cluster or the cloud, clocks, and
// writing statuses (pkg/controllers/nodeoverlay does that from Verdicts).
package overlay
