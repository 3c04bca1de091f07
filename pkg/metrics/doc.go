// Package metrics defines the Prometheus metrics dovetail exports and a
// CloudProvider decorator that times and counts cloud calls.
//
// # Names
//
// Where a metric means what the peer's (Karpenter's) metric of the same
// name means, it keeps that name and those labels, so existing dashboards
// and alerts work unchanged: karpenter_nodeclaims_created_total,
// karpenter_nodeclaims_terminated_total, karpenter_nodes_created_total,
// karpenter_nodes_terminated_total, karpenter_nodes_termination_duration_seconds,
// karpenter_pods_eviction_requests_total, karpenter_nodepools_usage,
// karpenter_nodepools_limit, karpenter_cloudprovider_duration_seconds,
// karpenter_cloudprovider_errors_total, karpenter_cluster_state_synced,
// karpenter_cluster_state_node_count,
// karpenter_nodeclaims_instance_termination_duration_seconds,
// karpenter_cloudprovider_instance_type_offering_available and
// _price_estimate, karpenter_pods_state, karpenter_pods_startup_duration_seconds
// and karpenter_build_info, among others. The peer's full list, and how
// each is served (same, differing labels, or not yet), is
// TestPeerMetricParity's (pkg/controllers). Metrics of our own are prefixed dovetail_: among
// them dovetail_nodepool_cost_per_hour{nodepool}, the per-team hourly cost
// platform teams asked for, and dovetail_nodepool_nodes.
//
// # Invariants
//
//   - No package globals: NewRegistry builds a fresh prometheus.Registry,
//     so several operators (and tests) can live in one process. The
//     operator serves Registry.Handler, which also includes
//     controller-runtime's own registry (controller_runtime_*,
//     workqueue_*, rest_client_*).
//   - Label values come from bounded sets (NodePool names, zones, instance
//     types, error type names), never from object names of pods or
//     NodeClaims, with two exceptions that keep the peer's labels: the
//     per-node gauges (node_name) and karpenter_pods_state (one series per
//     pod). Both are made when scraped (NodeGauges, ScrapeGauge), so they
//     keep no series between scrapes and a deleted object's series go
//     with it.
//   - Series of a deleted NodePool are dropped (DeleteNodePool).
//
// # Adding metrics
//
// Add a field to Registry, build it in NewRegistry and list it in
// collectors(). Collectors that live in other packages go through
// Registry.Register.
//
// See ExampleDecorate.
package metrics
