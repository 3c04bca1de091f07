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
//     at launch-time prices, not a bill;
//   - karpenter_nodes_allocatable and karpenter_nodes_total_pod_requests
//     per node of a pool (node_name, nodepool, resource_type,
//     capacity_type, instance_type, zone);
//   - karpenter_cluster_state_node_count: the distinct provider ids of
//     every Node (its name when it has none; managed or not) and every
//     launched NodeClaim, counted from the informer stores when scraped.
//
// # Cost
//
// A pool is recounted on its NodeClaims' changes and on its Nodes'
// arrivals, departures and changes of labels, capacity or provider id;
// that lists the pool's NodeClaims and Nodes, never pods, and the events
// of one PoolRecountDelay (1 s) share one recount, so a burst of launches
// does not recount the pool once per NodeClaim update. A node is
// recounted (its allocatable and the requests of the pods bound to it) on
// its own changes other than heartbeats and on its pods' events, so a pod
// event costs one node's pods, not a pass over the pool.
//
// A pool's series are rebuilt on every count and dropped when the pool is
// deleted; a node's series on every count of the node, dropped when it
// leaves the pool or is deleted. CountNodeClaims is pure and is what the
// tests check against.
package counter
