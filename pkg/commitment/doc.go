// Package commitment prices on-demand usage under a user's commitments:
// Savings Plans and Reserved Instances, declared in the ConfigMap
// dovetail-commitments (docs/cost.md, examples/commitments). A commitment
// is paid whether it is used or not, so on-demand usage up to it costs
// nothing at the margin; the engine (pkg/engine), the disruption planner
// (pkg/disruption), the lower bound (pkg/engine/bound, through the
// engine's offering prices) and `cost` price it this way.
//
// # Rules
//
//   - Only on-demand usage is covered. A Reserved Instance covers one
//     instance of its type (in its zone, when it names one) per count. A
//     Savings Plan covers on-demand spend up to HourlyCommitment $/h: a
//     Compute plan any type in any region, an EC2Instance plan the types of
//     its instance family (the part of the type's name before the dot) in
//     its region.
//   - Spend against a Savings Plan is counted at the on-demand price the
//     engine sees (the catalog's, or a NodeOverlay's). Real plans bill
//     their own, lower rates, so the real plan covers at least what is
//     counted: coverage is never claimed that is not there.
//   - Order: Reserved Instances first (in declaration order), then
//     EC2Instance Savings Plans, then Compute Savings Plans, as AWS applies
//     them. Existing on-demand nodes (by name) and in-flight on-demand
//     NodeClaims consume commitments first; what is left makes new
//     on-demand capacity cost about nothing at the margin, one whole node
//     at a time (a Savings Plan with $0.10/h left does not cover a
//     $0.19/h node; an existing node may be covered in part).
//   - Covered capacity is priced at PriceFactor of its on-demand price,
//     the factor reserved capacity uses: about zero, with the order among
//     covered offerings kept.
//   - A malformed or negative amount refuses the whole ConfigMap with an
//     error naming the field; plans are then made as without commitments.
//
// The package is pure: no clock, no cluster, no cloud.
package commitment
