package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

func TestErrorType(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"insufficient capacity", cloudprovider.NewInsufficientCapacityError(nil), metrics.ErrorInsufficientCapacity},
		{"wrapped not found", fmt.Errorf("deleting: %w", &cloudprovider.NodeClaimNotFoundError{ProviderID: "x"}), metrics.ErrorNodeClaimNotFound},
		{"node class not ready", &cloudprovider.NodeClassNotReadyError{NodeClass: "default"}, metrics.ErrorNodeClassNotReady},
		{"create error", &cloudprovider.CreateError{Reason: "Unauthorized"}, metrics.ErrorCreate},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), metrics.ErrorContext},
		{"anything else", errors.New("boom"), metrics.ErrorUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metrics.ErrorType(tt.err); got != tt.want {
				t.Fatalf("ErrorType(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func smallCloud() *fake.CloudProvider {
	return fake.New(&cloudprovider.InstanceType{
		Name:     "m5.large",
		Labels:   map[string]string{corev1.LabelInstanceTypeStable: "m5.large"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Offerings: cloudprovider.Offerings{
			{Zone: "z1", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.096, Available: true},
		},
	})
}

func TestDecoratorCountsCallsErrorsAndDurations(t *testing.T) {
	ctx := context.Background()
	reg := metrics.NewRegistry()
	inner := smallCloud()
	cp := metrics.Decorate(inner, reg, "test.controller", clocktesting.NewFakeClock(time.Unix(0, 0)))

	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{karpv1.NodePoolLabelKey: "team-a"}}}
	launched, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	inner.NextCreateErr = cloudprovider.NewInsufficientCapacityError(nil)
	if _, err := cp.Create(ctx, nc); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("decorator changed the error: %v", err)
	}
	if err := cp.Delete(ctx, launched); err != nil {
		t.Fatal(err)
	}
	// The second Delete says "gone": not an error for metrics, but passed on.
	if err := cp.Delete(ctx, launched); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Fatalf("second Delete = %v, want NodeClaimNotFound", err)
	}
	if _, err := cp.Get(ctx, launched.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Fatalf("Get after delete = %v", err)
	}

	calls := func(method, outcome string) float64 {
		return metricstest.Value(t, reg.CloudProviderCalls.WithLabelValues("test.controller", method, "fake", outcome))
	}
	errs := func(method, typ, pool string) float64 {
		return metricstest.Value(t, reg.CloudProviderErrors.WithLabelValues("test.controller", method, "fake", typ, pool))
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"Create successes", calls("Create", "success"), 1},
		{"Create errors", calls("Create", "error"), 1},
		{"Create ICE errors (the NodeClaim's pool)", errs("Create", metrics.ErrorInsufficientCapacity, "team-a"), 1},
		{"Delete successes (not-found included)", calls("Delete", "success"), 2},
		{"Delete errors", calls("Delete", "error"), 0},
		{"Get not-found errors (no pool)", errs("Get", metrics.ErrorNodeClaimNotFound, ""), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := metricstest.Count(reg.CloudProviderDuration); n != 3 {
		t.Errorf("duration series = %d, want 3 (Create, Delete, Get)", n)
	}
	if cp.Name() != "fake" || cp.Unwrap() != inner {
		t.Error("Name/Unwrap do not expose the decorated provider")
	}
}

func TestRegistryServesEveryMetricAndRejectsClashes(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.NodePoolCostPerHour.WithLabelValues("team-a").Set(1.5)
	reg.NodePoolUsage.WithLabelValues("cpu", "team-a").Set(4)
	reg.NodePoolUsage.WithLabelValues("cpu", "team-b").Set(2)
	reg.NodeClaimsDisrupted.WithLabelValues("expired", "team-a", "spot").Inc()
	reg.DisruptionDecisions.WithLabelValues("replace", "underutilized", "single").Inc()
	reg.DisruptionEligibleNodes.WithLabelValues("empty").Set(3)
	reg.DisruptionEvaluationDuration.Observe(0.2)
	reg.NodePoolAllowedDisruptions.WithLabelValues("team-a", "drifted").Set(2)
	reg.DisruptionSavings.WithLabelValues("empty").Add(0.25)
	reg.FleetPricePerHour.Set(3.5)
	reg.FleetLowerBoundPricePerHour.Set(3)

	body := scrape(t, reg)
	for _, want := range []string{
		`dovetail_nodepool_cost_per_hour{nodepool="team-a"} 1.5`,
		`karpenter_nodepools_usage{nodepool="team-a",resource_type="cpu"} 4`,
		`karpenter_build_info{`,
		`go_goroutines`,
		`karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="team-a",reason="expired"} 1`,
		`karpenter_voluntary_disruption_decisions_total{consolidation_type="single",decision="replace",reason="underutilized"} 1`,
		`karpenter_voluntary_disruption_eligible_nodes{reason="empty"} 3`,
		`karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count 1`,
		`karpenter_nodepools_allowed_disruptions{nodepool="team-a",reason="drifted"} 2`,
		`dovetail_disruption_savings_dollars_per_hour_total{reason="empty"} 0.25`,
		`dovetail_fleet_price_per_hour 3.5`,
		`dovetail_fleet_lower_bound_price_per_hour 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}

	reg.DeleteNodePool("team-a")
	if n := metricstest.Count(reg.NodePoolUsage); n != 1 {
		t.Errorf("usage series after deleting team-a = %d, want 1", n)
	}
	if n := metricstest.Count(reg.NodePoolAllowedDisruptions); n != 0 {
		t.Errorf("allowed-disruption series after deleting team-a = %d, want 0", n)
	}

	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "karpenter_cluster_state_synced", Help: "x"})
	if err := reg.Register(clash); err == nil {
		t.Error("registering a clashing collector succeeded")
	}
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "dovetail_extra_total", Help: "x"})
	if err := reg.Register(extra); err != nil {
		t.Errorf("registering a new collector: %v", err)
	}
}

// TestNamesListEveryRegisteredMetric: Names holds the registry's own
// metrics and those added with Register, and nothing else.
func TestNamesListEveryRegisteredMetric(t *testing.T) {
	r := metrics.NewRegistry()
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_extra_total", Help: "x"})
	if err := r.Register(extra); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range r.Names() {
		names[n] = true
	}
	for _, want := range []string{"karpenter_nodeclaims_created_total", "karpenter_voluntary_disruption_decisions_total", "dovetail_nodepool_info", "test_extra_total"} {
		if !names[want] {
			t.Errorf("Names lacks %s", want)
		}
	}
	if names["go_goroutines"] {
		t.Error("Names lists the Go runtime's metrics")
	}
}

// TestNodeGauges: a node's series are made from what Set holds, replaced
// whole by the next Set (a resource it no longer has is gone), and dropped
// by Delete and by DeleteNodePool for the nodes of that pool only.
func TestNodeGauges(t *testing.T) {
	reg := metrics.NewRegistry()
	g := reg.Nodes
	a := metrics.NodeLabels{NodePool: "team-a", CapacityType: "spot", InstanceType: "m5.large", Zone: "us-west-2a"}
	g.Set("n1", a, []metrics.NodeValue{{Resource: "cpu", Value: 1.93}, {Resource: "nvidia.com/gpu", Value: 1}},
		[]metrics.NodeValue{{Resource: "cpu", Value: 0.7}})
	g.Set("n2", metrics.NodeLabels{NodePool: "team-b"}, []metrics.NodeValue{{Resource: "pods", Value: 29}}, nil)

	body := scrape(t, reg)
	for _, want := range []string{
		`karpenter_nodes_allocatable{capacity_type="spot",instance_type="m5.large",node_name="n1",nodepool="team-a",resource_type="cpu",zone="us-west-2a"} 1.93`,
		`karpenter_nodes_allocatable{capacity_type="spot",instance_type="m5.large",node_name="n1",nodepool="team-a",resource_type="nvidia.com/gpu",zone="us-west-2a"} 1`,
		`karpenter_nodes_total_pod_requests{capacity_type="spot",instance_type="m5.large",node_name="n1",nodepool="team-a",resource_type="cpu",zone="us-west-2a"} 0.7`,
		`karpenter_nodes_allocatable{capacity_type="",instance_type="",node_name="n2",nodepool="team-b",resource_type="pods",zone=""} 29`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if n := metricstest.Count(g.Allocatable); n != 3 {
		t.Errorf("allocatable series = %d, want 3", n)
	}

	g.Set("n1", a, []metrics.NodeValue{{Resource: "cpu", Value: 2}}, []metrics.NodeValue{{Resource: "cpu", Value: 0}})
	if n := metricstest.Count(metricstest.With(g.Allocatable, prometheus.Labels{metrics.LabelNodeName: "n1"})); n != 1 {
		t.Errorf("n1's allocatable series after a Set without the gpu = %d, want 1", n)
	}
	if v := metricstest.Value(t, metricstest.With(g.Requests, prometheus.Labels{metrics.LabelNodeName: "n1", metrics.LabelResourceType: "cpu"})); v != 0 {
		t.Errorf("n1's cpu requests = %v, want 0", v)
	}

	reg.DeleteNodePool("team-b")
	if n := metricstest.Count(g.Allocatable); n != 1 || g.Len() != 1 {
		t.Errorf("after deleting team-b: %d allocatable series, %d nodes; want 1 and 1 (n1's)", n, g.Len())
	}
	g.Delete("n1")
	if n := metricstest.Count(g.Allocatable) + metricstest.Count(g.Requests); n != 0 {
		t.Errorf("series after deleting n1 = %d, want 0", n)
	}
}

// scrape returns what reg's handler serves.
func scrape(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
