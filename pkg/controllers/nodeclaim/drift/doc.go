// Package drift records whether a launched NodeClaim still matches what
// would be launched today, as its Drifted condition (True with a reason,
// or absent). It only observes; replacing drifted nodes belongs to
// disruption.
//
// # Checks, first match wins
//
//  1. NodePoolDrifted: the NodeClaim's karpenter.sh/nodepool-hash differs
//     from its NodePool's (both stamped with the same hash version; see
//     package pkg/nodepoolhash for what the hash covers).
//  2. RequirementsDrifted: a NodePool requirement no longer admits the
//     NodeClaim's label of that key (labels the NodeClaim lacks are not
//     judged).
//  3. The cloud provider's own reasons (CloudProvider.IsDrifted): image,
//     subnet, security group, node class static fields.
//
// # Invariants
//
// A NodeClaim is checked when it, its NodePool or its node class changes,
// and every poll interval regardless (cloud-side drift makes no event).
// The check reads only; the one write is the NodeClaim's status, under
// optimistic locking.
package drift
