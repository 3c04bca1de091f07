// Package poddeletioncost is the controller of the peer's feature gate
// PodDeletionCostManagement: it writes controller.kubernetes.io/pod-deletion-cost
// on pods owned by ReplicaSets so that a Deployment scale-down removes pods
// first from the nodes the disruption planner would drain first
// (disruption.DrainOrder), turning a later consolidation into emptiness.
//
// Every pass (Options.Interval) it reads NodePools, NodeClaims, Nodes,
// Pods and PDBs from the cache, ranks the managed nodes that have pods
// with disruption.DrainOrder, and gives the pods on the node ranked i of
// n the cost i-n: the first node's pods get the lowest, every cost it
// writes is negative, so they go before pods without a cost (0).
//
// It only touches pods it manages: a pod owned by a ReplicaSet, not being
// deleted, and either without a deletion cost or marked with
// dovetail.sh/pod-deletion-cost-managed: "true" (written with the cost).
// A cost someone else set (no marker) is left alone. A pod is patched
// only when its cost changes, at most Options.MaxWritesPerPass a pass (the
// first-ranked nodes first), each patch conditional on the pod's
// resourceVersion (a pod changed since it was read is retried next pass).
// With the gate off the controller does not run: nothing is written and
// nothing removed.
//
// Metrics: karpenter_pod_deletion_cost_pod_annotation_writes_total{result}
// (success, failure) and
// karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes{nodepool}
// (nodes whose pods still need a write after the pass).
//
// It imports no other controller.
package poddeletioncost
