// Package nodeclaimutil holds what dovetail's controllers share about
// NodeClaims and the Nodes they become: the cache indexes that find one
// from the other, the annotations dovetail writes, small helpers for
// patching status under optimistic locking, the listing of the
// NodeOverlays that price the instance types NodeClaims are made of, and
// the listing of cached Pods without copies (ListPods, Store: the cache's
// own objects, trimmed and shared by pkg/operator/cachetrim, read-only).
//
// # Vocabulary
//
//   - managed node: a Node carrying the karpenter.sh/nodepool label, i.e.
//     one dovetail launched (or the peer did, before a migration).
//   - providerID: the cloud's instance ID, the only link between a
//     NodeClaim (status.providerID) and its Node (spec.providerID).
//
// # Invariants
//
// RegisterIndexes must run once per manager, before the manager starts;
// every lookup here reads through those indexes, so it only works on a
// client backed by that manager's cache (or on any client, for the
// functions that take no index). Helpers never sleep and never retry
// on their own: a conflict is returned to the caller, which requeues
// (see RequeueOnConflict).
//
// See ExampleHourlyPrice.
package nodeclaimutil
