// Package termination (nodeclaim/termination) finishes the deletion of a
// NodeClaim. Together with node/termination it makes `kubectl delete
// nodeclaim X` and `kubectl delete node Y` end the same way: pods drained
// within their PDBs, volumes detached, instance gone, both objects gone.
//
// # Flow
//
//	NodeClaim deleted ──► stamp karpenter.sh/nodeclaim-termination-timestamp
//	                      (deletion time + spec.terminationGracePeriod)
//	                 ──► delete its Node(s) ──► node/termination drains them
//	                 ──► once no Node is left: CloudProvider.Delete until
//	                      NodeClaimNotFound (InstanceTerminating=True)
//	                 ──► drop the karpenter.sh/termination finalizer
//
// # Metrics
//
// karpenter_nodeclaims_terminated_total{nodepool,capacity_type,zone} when
// the finalizer goes, and, for a launched NodeClaim,
// karpenter_nodeclaims_instance_termination_duration_seconds{nodepool}:
// the time from the InstanceTerminating condition's transition (the first
// Delete call; kept on the NodeClaim, so a restart in between does not
// reset it) to the cloud reporting the instance gone.
//
// # Invariants
//
//   - The finalizer is released only after the cloud reports the instance
//     gone, so an instance never outlives its NodeClaim unnoticed (garbage
//     collection covers instances whose NodeClaim never saw them).
//   - A NodeClaim that never launched (no providerID) is released after one
//     Delete call that finds its instance by tag, or nothing.
//   - Time comes from the injected clock; a terminating instance is polled
//     every InstancePollInterval, by requeue, never by sleeping.
//
// See the tests in package node/termination for the end-to-end scenarios.
package termination
