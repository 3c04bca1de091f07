package controllers_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/controllers"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// How dovetail serves a metric of the peer.
const (
	// same: registered under the peer's name, with its type and labels.
	same = iota
	// differs: registered under the peer's name with the type and labels
	// in ours (they differ from the peer's; why says how).
	differs
	// notServed: not registered; why says why.
	notServed
)

// peerMetric is one metric the peer (Karpenter v1.15: sigs.k8s.io/karpenter
// v1.15.0 and github.com/aws/karpenter-provider-aws v1.15.2) registers.
type peerMetric struct {
	name, typ string
	// labels are the peer's label names.
	labels []string
	serve  int
	// ours are our labels where serve is differs.
	ours []string
	why  string
}

// peerMetrics are facts read from the peer's source: every metric its
// controller registers (the opmetrics.NewPrometheus* declarations in
// sigs.k8s.io/karpenter@v1.15.0/pkg/... and
// github.com/aws/karpenter-provider-aws@v1.15.2/pkg/..., from the module
// zips in the Go module cache), with its type and label names, plus
// karpenter_ignored_pod_count, the name the peer's metrics reference page
// (karpenter.sh/docs/reference/metrics) lists for
// karpenter_scheduler_ignored_pods_count. Not listed: controller-runtime's,
// client-go's and operatorpkg's generic metrics (operator_*_status_condition_*).
var peerMetrics = []peerMetric{
	// NodeClaims.
	{name: "karpenter_nodeclaims_created_total", typ: "counter", labels: []string{"reason", "nodepool", "min_values_relaxed"}},
	{name: "karpenter_nodeclaims_terminated_total", typ: "counter", labels: []string{"nodepool", "capacity_type", "zone"}},
	{name: "karpenter_nodeclaims_disrupted_total", typ: "counter", labels: []string{"reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"},
		serve: differs, ours: []string{"reason", "nodepool", "capacity_type"}, why: "no consolidation_policy or termination_mode label yet"},
	{name: "karpenter_nodeclaims_instance_termination_duration_seconds", typ: "histogram", labels: []string{"nodepool"}},
	{name: "karpenter_nodeclaims_termination_duration_seconds", typ: "histogram", labels: []string{"nodepool"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_nodeclaims_unhealthy_disrupted_total", typ: "counter", labels: []string{"condition", "nodepool", "capacity_type", "image_id", "termination_mode"},
		serve: notServed, why: "node repair is not built yet"},

	// Nodes.
	{name: "karpenter_nodes_created_total", typ: "counter", labels: []string{"nodepool", "zone"}},
	{name: "karpenter_nodes_terminated_total", typ: "counter", labels: []string{"nodepool", "zone"}},
	{name: "karpenter_nodes_termination_duration_seconds", typ: "summary", labels: []string{"nodepool"}},
	{name: "karpenter_nodes_allocatable", typ: "gauge", labels: []string{"(node_name, phase, managed, resource_type and every well-known node label)"},
		serve: differs, ours: []string{"node_name", "nodepool", "resource_type", "capacity_type", "instance_type", "zone"}, why: "a fixed set of node labels (memory: docs/controller.md)"},
	{name: "karpenter_nodes_total_pod_requests", typ: "gauge", labels: []string{"(node_name, phase, managed, resource_type and every well-known node label)"},
		serve: differs, ours: []string{"node_name", "nodepool", "resource_type", "capacity_type", "instance_type", "zone"}, why: "a fixed set of node labels (memory: docs/controller.md)"},
	{name: "karpenter_nodes_total_pod_limits", typ: "gauge", serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_total_daemon_requests", typ: "gauge", serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_total_daemon_limits", typ: "gauge", serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_system_overhead", typ: "gauge", serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_current_lifetime_seconds", typ: "gauge", serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_drained_total", typ: "counter", labels: []string{"nodepool"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_lifetime_duration_seconds", typ: "histogram", labels: []string{"nodepool"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_nodes_reboots_total", typ: "counter", labels: []string{"result"}, serve: notServed, why: "RebootForRepair is not built yet"},
	{name: "karpenter_nodes_reboot_duration_seconds", typ: "histogram", labels: []string{"result"}, serve: notServed, why: "RebootForRepair is not built yet"},
	{name: "karpenter_nodes_reboot_recovery_duration_seconds", typ: "histogram", serve: notServed, why: "RebootForRepair is not built yet"},
	{name: "karpenter_cluster_utilization_percent", typ: "gauge", labels: []string{"resource_type"}, serve: notServed, why: "not built yet"},

	// Pods.
	{name: "karpenter_pods_state", typ: "gauge", labels: []string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"}},
	{name: "karpenter_pods_startup_duration_seconds", typ: "summary"},
	{name: "karpenter_pods_eviction_requests_total", typ: "counter", labels: []string{"code"}},
	{name: "karpenter_pods_drained_total", typ: "counter", labels: []string{"reason"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_disruption_initiated_total", typ: "counter", labels: []string{"reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_unstarted_time_seconds", typ: "gauge", labels: []string{"name", "namespace"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_bound_duration_seconds", typ: "histogram", labels: []string{"dynamic_resources"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_unbound_time_seconds", typ: "gauge", labels: []string{"name", "namespace", "dynamic_resources"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_provisioning_bound_duration_seconds", typ: "histogram", labels: []string{"dynamic_resources"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_provisioning_unbound_time_seconds", typ: "gauge", labels: []string{"name", "namespace", "dynamic_resources"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_provisioning_startup_duration_seconds", typ: "histogram", serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_provisioning_unstarted_time_seconds", typ: "gauge", labels: []string{"name", "namespace"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_provisioning_scheduling_undecided_time_seconds", typ: "gauge", labels: []string{"name", "namespace"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_pods_scheduling_decision_duration_seconds", typ: "histogram", serve: notServed, why: "not built yet"},
	{name: "karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes", typ: "gauge", labels: []string{"nodepool"}},
	{name: "karpenter_pod_deletion_cost_pod_annotation_writes_total", typ: "counter", labels: []string{"result"}},

	// NodePools.
	{name: "karpenter_nodepools_usage", typ: "gauge", labels: []string{"resource_type", "nodepool"}},
	{name: "karpenter_nodepools_limit", typ: "gauge", labels: []string{"resource_type", "nodepool"}},
	{name: "karpenter_nodepools_allowed_disruptions", typ: "gauge", labels: []string{"nodepool", "reason"}},
	{name: "karpenter_nodepools_nodes_consuming_budgets", typ: "gauge", labels: []string{"nodepool", "reason"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_nodepools_cost_total", typ: "gauge", labels: []string{"nodepool"}},
	{name: "karpenter_nodepools_cost_tracker_errors_total", typ: "counter", labels: []string{"nodepool"}, serve: notServed, why: "not built yet"},

	// Voluntary disruption.
	{name: "karpenter_voluntary_disruption_decisions_total", typ: "counter", labels: []string{"decision", "reason", "consolidation_type"}},
	{name: "karpenter_voluntary_disruption_decisions_by_nodepool_total", typ: "counter", labels: []string{"nodepool", "decision", "reason", "consolidation_type"}},
	{name: "karpenter_voluntary_disruption_eligible_nodes", typ: "gauge", labels: []string{"reason"}},
	{name: "karpenter_voluntary_disruption_decision_evaluation_duration_seconds", typ: "histogram", labels: []string{"reason", "consolidation_type"},
		serve: differs, why: "one planner pass covers every method: no labels"},
	{name: "karpenter_voluntary_disruption_terminate_first_decisions_total", typ: "counter", labels: []string{"nodepool", "reason", "terminate_first_reason"}},
	{name: "karpenter_voluntary_disruption_consolidation_timeouts_total", typ: "counter", labels: []string{"consolidation_type"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_voluntary_disruption_failed_validations_total", typ: "counter", labels: []string{"consolidation_type"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_voluntary_disruption_queue_failures_total", typ: "counter", labels: []string{"decision", "reason", "consolidation_type"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_consolidation_score", typ: "histogram", labels: []string{"decision", "nodepool", "policy"}, serve: notServed, why: "balanced consolidation is not built yet"},
	{name: "karpenter_consolidation_moves_total", typ: "counter", labels: []string{"decision", "nodepool", "policy"}, serve: notServed, why: "balanced consolidation is not built yet"},

	// Cluster state and scheduling.
	{name: "karpenter_cluster_state_node_count", typ: "gauge"},
	{name: "karpenter_cluster_state_synced", typ: "gauge"},
	{name: "karpenter_cluster_state_unsynced_time_seconds", typ: "gauge", serve: notServed, why: "not built yet"},
	{name: "karpenter_scheduler_scheduling_duration_seconds", typ: "histogram", labels: []string{"controller"}},
	{name: "karpenter_scheduler_queue_depth", typ: "gauge", labels: []string{"controller", "scheduling_id"}},
	{name: "karpenter_scheduler_unschedulable_pods_count", typ: "gauge", labels: []string{"controller"}},
	{name: "karpenter_scheduler_ignored_pods_count", typ: "gauge"},
	{name: "karpenter_ignored_pod_count", typ: "gauge"},
	{name: "karpenter_scheduler_unfinished_work_seconds", typ: "gauge", labels: []string{"controller", "scheduling_id"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_scheduler_pending_pods_by_effective_zone_count", typ: "gauge", labels: []string{"controller", "zone"}, serve: notServed, why: "not built yet"},

	// Cloud provider.
	{name: "karpenter_cloudprovider_duration_seconds", typ: "histogram", labels: []string{"controller", "method", "provider"}},
	{name: "karpenter_cloudprovider_errors_total", typ: "counter", labels: []string{"controller", "method", "provider", "error", "nodepool"}},
	{name: "karpenter_cloudprovider_instance_type_offering_available", typ: "gauge", labels: []string{"instance_type", "capacity_type", "zone"}},
	{name: "karpenter_cloudprovider_instance_type_offering_price_estimate", typ: "gauge", labels: []string{"instance_type", "capacity_type", "zone"}},
	{name: "karpenter_cloudprovider_instance_type_cpu_cores", typ: "gauge", labels: []string{"instance_type"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_cloudprovider_instance_type_memory_bytes", typ: "gauge", labels: []string{"instance_type"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_cloudprovider_instance_launch_failures_total", typ: "counter", labels: []string{"zone", "zone_id", "capacity_type", "reason"},
		serve: notServed, why: "served as dovetail_nodeclaims_insufficient_capacity_total{nodepool} and karpenter_cloudprovider_errors_total"},
	{name: "karpenter_cloudprovider_instance_termination_failures_total", typ: "counter", labels: []string{"zone", "zone_id"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_cloudprovider_batcher_batch_time_seconds", typ: "histogram", labels: []string{"batcher"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_cloudprovider_batcher_batch_size", typ: "histogram", labels: []string{"batcher"}, serve: notServed, why: "not built yet"},
	{name: "karpenter_ec2nodeclasses_userdata_bytes", typ: "gauge", labels: []string{"nodeclass"}, serve: notServed, why: "not built yet"},

	// Interruption.
	{name: "karpenter_interruption_received_messages_total", typ: "counter", labels: []string{"message_type"}},
	{name: "karpenter_interruption_deleted_messages_total", typ: "counter"},
	{name: "karpenter_interruption_message_queue_duration_seconds", typ: "histogram"},
	{name: "karpenter_interruption_instance_status_unhealthy_total", typ: "counter", labels: []string{"category"}, serve: notServed, why: "instance status polling is not built yet"},

	// Build.
	{name: "karpenter_build_info", typ: "gauge", labels: []string{"version", "goversion", "goarch", "commit"}},
}

// registered are the metrics of a controller built as the operator builds
// it: the registry's own and those the controllers register.
func registered(t *testing.T) map[string]metrics.Info {
	t.Helper()
	reg := metrics.NewRegistry()
	clk := clock.RealClock{}
	if _, err := controllers.NewControllers(controllers.Deps{
		Cloud: controllerstest.NewCloud(), Clock: clk, Metrics: reg, Unavailable: unavailable.New(clk, 0),
	}, controllers.Config{LaunchTimeout: time.Minute, RegistrationTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	out := map[string]metrics.Info{}
	for _, i := range reg.Infos() {
		out[i.Name] = i
	}
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// TestPeerMetricParity: every peer metric dovetail serves is registered
// under the peer's name with the peer's type and labels (or, where they
// differ, with the labels the list records); none it does not serve is
// registered with other labels. It fails when a served metric is removed
// or renamed, or its type or labels change.
func TestPeerMetricParity(t *testing.T) {
	ours := registered(t)
	seen := map[string]bool{}
	served := 0
	for _, p := range peerMetrics {
		if seen[p.name] {
			t.Errorf("%s is listed twice", p.name)
		}
		seen[p.name] = true
		got, ok := ours[p.name]
		switch p.serve {
		case same, differs:
			want := p.labels
			if p.serve == differs {
				want = p.ours
				if p.why == "" {
					t.Errorf("%s differs from the peer's without saying why", p.name)
				}
			}
			if !ok {
				t.Errorf("%s (%s %v) is not registered", p.name, p.typ, p.labels)
				continue
			}
			served++
			if got.Type != p.typ {
				t.Errorf("%s is a %s, the peer's a %s", p.name, got.Type, p.typ)
			}
			if !slices.Equal(got.Labels, sorted(want)) {
				t.Errorf("%s has labels %v, want %v", p.name, got.Labels, sorted(want))
			}
		case notServed:
			if p.why == "" {
				t.Errorf("%s is not served without saying why", p.name)
			}
			if !ok {
				continue
			}
			// Served since the list was written: fine if it matches the
			// peer; the list should then say so.
			if got.Type != p.typ || !slices.Equal(got.Labels, sorted(p.labels)) {
				t.Errorf("%s is registered as %s %v, the peer's is %s %v", p.name, got.Type, got.Labels, p.typ, sorted(p.labels))
			} else {
				t.Logf("%s is now served as the peer's: mark it served in peerMetrics", p.name)
			}
		}
	}
	// Every karpenter_ metric of ours is one of the peer's.
	for name := range ours {
		if strings.HasPrefix(name, metrics.PeerNamespace+"_") && !seen[name] {
			t.Errorf("%s has the peer's prefix but is not a metric of the peer's", name)
		}
	}
	t.Logf("%d of the peer's %d metrics served", served, len(peerMetrics))
}
