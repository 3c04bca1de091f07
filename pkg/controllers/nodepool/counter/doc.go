// Package counter keeps a NodePool's status.resources and status.nodes
// (the NODES, CPU and MEMORY columns of `kubectl get nodepool -o wide`) and
// its metrics current.
//
// # What is counted
//
// Every NodeClaim labelled with the pool that has launched (has a
// providerID), deleting ones included, since their capacity is still paid
// for and still counts against spec.limits. A NodeClaim adds its node's
// reported capacity once the node has registered, its launch estimate
// before; every resource is summed (cpu, memory, pods, ephemeral-storage,
// extended resources such as nvidia.com/gpu), plus "nodes", the count.
//
// # Metrics
//
//   - karpenter_nodepools_usage{resource_type,nodepool} and
//     karpenter_nodepools_limit{resource_type,nodepool} (the peer's names);
//   - dovetail_nodepool_nodes{nodepool,capacity_type,instance_type};
//   - dovetail_nodepool_cost_per_hour{nodepool}: the sum of the launch
//     prices the lifecycle controller recorded in dovetail.sh/price-per-hour,
//     the per-team hourly cost platform teams asked for. It is an estimate
//     at launch-time prices, not a bill.
//
// A pool's series are rebuilt on every count and dropped when the pool is
// deleted. CountNodeClaims is pure and is what the tests check against.
package counter
