// Package garbagecollection sweeps for what falls between the cloud and
// the cluster, every Options.Interval (a singleton controller, so only the
// leader sweeps):
//
//   - instances the cloud lists (CloudProvider.List: every live instance
//     tagged for this cluster) that no NodeClaim references by providerID
//     are terminated once older than Options.GracePeriod; an instance whose
//     NodeClaim (matched by name) has no providerID yet is spared, since its
//     launch is being recorded;
//   - NodeClaims that launched but whose instance is gone (absent from the
//     list, and Get confirms NodeClaimNotFound) are deleted;
//   - managed Nodes (karpenter.sh/nodepool label) whose providerID no
//     NodeClaim carries are deleted once older than the grace period; their
//     termination drains them and terminates the instance.
//
// The sweep reads the cache; before it terminates an instance or deletes a
// node it confirms around the cache (Options.Live, the manager's API reader)
// that no NodeClaim claims it, so a cache behind a loaded API server (a
// NodeClaim it has not heard of, or an old copy without its providerID)
// never costs a live instance. Each removal is counted in
// dovetail_garbage_collected_total{kind}.
//
// # Invariants
//
// The grace period is measured on the injected clock against the
// instance's launch time (the CreationTimestamp of the NodeClaim view the
// provider returns) or the node's creation time. The sweep never sleeps;
// it asks to run again after Interval, or sooner when something leaves its
// grace period first. A failure in one part does not stop the others; the
// errors are joined and the sweep is retried with backoff.
package garbagecollection
