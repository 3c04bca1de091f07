// Package termination (node/termination) drains and terminates Nodes that
// are being deleted and carry the karpenter.sh/termination finalizer.
//
// # Flow of one node
//
//  1. If the node's NodeClaim is not being deleted, delete it (so that
//     `kubectl delete node` and `kubectl delete nodeclaim` converge; the
//     NodeClaim's deadline annotation comes from nodeclaim/termination).
//  2. Taint karpenter.sh/disrupted:NoSchedule.
//  3. Drain, in groups, each group only after the previous one is empty:
//     non-critical pods, non-critical DaemonSet pods, critical pods
//     (priority class system-cluster-critical or system-node-critical),
//     critical DaemonSet pods. Pods are evicted through the Eviction API,
//     so PodDisruptionBudgets hold; a refused eviction (429) is retried per
//     pod after 100 ms, doubling up to 10 s, by requeue. Not evicted: mirror
//     (static) pods, finished pods, pods already terminating (waited for
//     until a minute past their deletion deadline), and pods annotated
//     karpenter.sh/do-not-disrupt (waited for).
//  4. With a deadline (karpenter.sh/nodeclaim-termination-timestamp, or the
//     NodeClaim's deletion time + terminationGracePeriod) each remaining
//     pod is deleted, not evicted, at deadline - its own grace period, with
//     the grace that is left; at the deadline the drain stops waiting.
//  5. Wait for the node's VolumeAttachments to go, bounded by the deadline
//     or, without one, by Options.VolumeDetachTimeout after the drain.
//  6. CloudProvider.Delete until the instance is gone (InstanceTerminating).
//  7. Drop the finalizer; the Node disappears.
//
// The NodeClaim's Drained, VolumesDetached and InstanceTerminating
// conditions follow each step.
//
// # Invariants
//
// No sleeps: every wait is a requeue computed from the injected clock, or a
// watch on the pods, VolumeAttachments and NodeClaim of a deleting node.
// Eviction backoff state is in memory and per pod; losing it (restart)
// only means one early retry.
package termination
