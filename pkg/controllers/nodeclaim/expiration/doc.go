// Package expiration deletes a NodeClaim once it is older than its
// spec.expireAfter (copied from the NodePool template when the NodeClaim
// was made; Never means never). The deletion is forceful: no disruption
// budget, no do-not-disrupt and no validation apply, as with the peer.
// The existing termination path drains the node (PDBs honoured, bounded by
// terminationGracePeriod), and provisioning launches capacity for the pods
// that become pending.
//
// Each expiry gets an Expired event on the NodeClaim and counts in
// karpenter_nodeclaims_disrupted_total{reason="expired"}.
//
// # Invariants
//
// Age is measured on the injected clock from the NodeClaim's
// creationTimestamp; the reconcile asks to run again exactly when the
// NodeClaim falls due. Nothing is kept in memory: a restart recomputes
// every deadline from the objects.
package expiration
