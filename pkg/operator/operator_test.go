package operator_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// resolver is an in-memory implementation of our own node class Resolver:
// every class resolves to one subnet and is Ready.
type resolver struct{}

func (resolver) Resolve(_ context.Context, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, error) {
	out := nc.DeepCopy()
	out.Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: controllerstest.ZoneA}}
	for _, c := range awsv1.ReadyDependents {
		out.SetCondition(c, metav1.ConditionTrue, "Resolved", "", time.Now())
	}
	return out, nil
}

// running is an operator started by a test.
type running struct {
	op     *operator.Operator
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
	once   sync.Once
}

// stop cancels the operator and waits for it (once).
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("operator stopped with %v", err)
			}
		case <-time.After(controllerstest.Timeout):
			t.Error("operator did not stop")
		}
	})
}

type syncBuffer struct {
	mu  sync.Mutex
	b   strings.Builder
	out io.Writer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	return s.out.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testOptions(lease string) operator.Options {
	o := operator.DefaultOptions()
	o.ClusterName = "test"
	o.BindAddress = "127.0.0.1"
	o.MetricsPort, o.HealthProbePort = 0, 0
	o.LeaderElection.Name = lease
	o.LeaderElection.LeaseDuration = 4 * time.Second
	o.LeaderElection.RenewDeadline = 3 * time.Second
	o.LeaderElection.RetryPeriod = 200 * time.Millisecond
	return o
}

// start builds and starts an operator on cfg using the Env's fake cloud.
func start(t *testing.T, env *controllerstest.Env, cfg *rest.Config, opts operator.Options) *running {
	t.Helper()
	logs := &syncBuffer{out: env.LogWriter()}
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, cfg, opts, operator.Deps{
		Cloud: func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
			return operator.Cloud{Provider: env.Cloud, NodeClassResolver: resolver{}}, nil
		},
		LogOutput: logs,
	})
	if err != nil {
		cancel()
		t.Fatalf("operator.New: %v", err)
	}
	r := &running{op: op, cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { r.done <- op.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	env.Eventually("the operator to be ready", func() (bool, error) {
		resp, err := http.Get("http://" + op.HealthAddr() + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return r
}

func elected(op *operator.Operator) bool {
	select {
	case <-op.Manager.Elected():
		return true
	default:
		return false
	}
}

// scrape reads the operator's /metrics.
func scrape(t *testing.T, op *operator.Operator) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + op.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// sample returns the value of the series of name with exactly the given
// labels (a subset match), and whether there was one.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match != len(labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}

func readyNodeClaim(t *testing.T, env *controllerstest.Env, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	env.Create(nc)
	env.Eventually("NodeClaim "+nc.Name+" Ready", func() (bool, error) {
		err := env.Get(nc)
		return nc.IsTrue(karpv1.ConditionTypeReady), err
	})
	return nc
}

// TestMetricsAfterALaunchAndATermination scrapes a running operator after
// a NodeClaim's whole life and checks names, labels and values.
func TestMetricsAfterALaunchAndATermination(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.StartKubelet(controllerstest.KubeletOptions{})
	env.Create(controllerstest.EC2NodeClass("default"))
	np := controllerstest.NodePool("team-a")
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	env.Create(np)
	opts := testOptions(env.Prefix)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.ProfilingBindAddress = ln.Addr().String()
	ln.Close()
	r := start(t, env, cp.RESTConfig(), opts)
	env.Eventually("leadership", func() (bool, error) { return elected(r.op), nil })
	// --profiling-bind-address serves pprof.
	env.Eventually("a heap profile", func() (bool, error) {
		resp, err := http.Get("http://" + opts.ProfilingBindAddress + "/debug/pprof/heap?debug=1")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
			return false, fmt.Errorf("status %d: %.80s", resp.StatusCode, body)
		}
		return true, nil
	})

	nc := readyNodeClaim(t, env, controllerstest.NodeClaim("metrics", np.Name))
	env.Eventually("the pool to count its node and be Ready", func() (bool, error) {
		err := env.Get(np)
		return np.Status.Nodes != nil && *np.Status.Nodes == 1 && np.IsTrue(karpv1.ConditionTypeReady), err
	})

	type want struct {
		name   string
		labels map[string]string
		value  float64
	}
	mismatches := func(fams map[string]*dto.MetricFamily, wants []want) []string {
		var out []string
		for _, w := range wants {
			got, ok := sample(fams, w.name, w.labels)
			if !ok {
				out = append(out, fmt.Sprintf("no series %s%v", w.name, w.labels))
				continue
			}
			if w.value >= 0 && math.Abs(got-w.value) > 1e-9 {
				out = append(out, fmt.Sprintf("%s%v = %v, want %v", w.name, w.labels, got, w.value))
			}
		}
		return out
	}
	check := func(fams map[string]*dto.MetricFamily, wants []want) {
		t.Helper()
		for _, m := range mismatches(fams, wants) {
			t.Error(m)
		}
	}
	pool := map[string]string{"nodepool": np.Name}
	check(scrape(t, r.op), []want{
		{"karpenter_nodeclaims_created_total", map[string]string{"nodepool": np.Name, "reason": "provisioning", "min_values_relaxed": "false"}, 1},
		{"karpenter_nodes_created_total", map[string]string{"nodepool": np.Name, "zone": controllerstest.ZoneA}, 1},
		{"dovetail_nodeclaims_registered_total", pool, 1},
		{"karpenter_nodepools_usage", map[string]string{"nodepool": np.Name, "resource_type": "cpu"}, 2},
		{"karpenter_nodepools_usage", map[string]string{"nodepool": np.Name, "resource_type": "nodes"}, 1},
		{"karpenter_nodepools_limit", map[string]string{"nodepool": np.Name, "resource_type": "cpu"}, 100},
		{"dovetail_nodepool_nodes", map[string]string{"nodepool": np.Name, "capacity_type": "on-demand", "instance_type": "m5.large"}, 1},
		{"dovetail_nodepool_cost_per_hour", pool, 0.096},
		{"karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "fake"}, 1},
		{"dovetail_cloudprovider_calls_total", map[string]string{"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "fake", "outcome": "success"}, 1},
		{"karpenter_cluster_state_synced", nil, 1},
		{"karpenter_build_info", nil, 1},
		// controller-runtime's own registry is served too.
		{"controller_runtime_reconcile_total", map[string]string{"controller": "nodeclaim.lifecycle", "result": "success"}, -1},
	})

	// The peer's pod, offering, node-count and ignored-pod metrics, from
	// a pod kwok runs on the node and a pod that refuses every pool.
	ns := env.Namespace()
	pod := controllerstest.Pod(ns, "web", nc.Status.NodeName)
	env.Create(pod)
	refusing := controllerstest.Pod(ns, "unmanaged-only", "")
	refusing.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpDoesNotExist}},
		}}},
	}}
	env.Create(refusing)
	peer := []want{
		{"karpenter_pods_state", map[string]string{"name": "web", "namespace": ns, "node": nc.Status.NodeName, "scheduled": "true",
			"nodepool": np.Name, "zone": controllerstest.ZoneA, "capacity_type": "on-demand", "instance_type": "m5.large",
			"phase": "Running", "ready": "true", "managed": "true"}, 1},
		{"karpenter_pods_state", map[string]string{"name": "unmanaged-only", "namespace": ns, "scheduled": "false", "phase": "Pending", "managed": "false"}, 1},
		{"karpenter_pods_startup_duration_seconds", nil, -1},
		{"karpenter_cloudprovider_instance_type_offering_available", map[string]string{"instance_type": "m5.large", "capacity_type": "on-demand", "zone": controllerstest.ZoneA}, 1},
		{"karpenter_cloudprovider_instance_type_offering_price_estimate", map[string]string{"instance_type": "m5.large", "capacity_type": "on-demand", "zone": controllerstest.ZoneA}, 0.096},
		{"karpenter_scheduler_ignored_pods_count", nil, 1},
		{"karpenter_ignored_pod_count", nil, 1},
	}
	env.Eventually("the peer's pod, offering and ignored-pod metrics", func() (bool, error) {
		if m := mismatches(scrape(t, r.op), peer); len(m) > 0 {
			return false, fmt.Errorf("%v", m)
		}
		return true, nil
	})
	fams := scrape(t, r.op)
	if n, _ := sample(fams, "karpenter_pods_startup_duration_seconds", nil); n < 1 {
		t.Errorf("%v pod startups observed, want at least 1 (the web pod)", n)
	}
	if n, _ := sample(fams, "karpenter_cluster_state_node_count", nil); n < 1 {
		t.Errorf("karpenter_cluster_state_node_count = %v, want at least the NodeClaim's node", n)
	}
	env.Delete(refusing)
	env.Delete(pod)

	env.Delete(nc)
	env.Eventually("the NodeClaim to be gone", func() (bool, error) { return env.NotFound(nc) })
	// The counters move right after the finalizers go: poll for them.
	terminated := []want{
		{"karpenter_nodeclaims_terminated_total", map[string]string{"nodepool": np.Name, "capacity_type": "on-demand", "zone": controllerstest.ZoneA}, 1},
		{"karpenter_nodes_terminated_total", map[string]string{"nodepool": np.Name, "zone": controllerstest.ZoneA}, 1},
		{"karpenter_nodes_termination_duration_seconds", pool, 1},
		{"karpenter_nodeclaims_instance_termination_duration_seconds", pool, 1},
	}
	env.Eventually("termination metrics", func() (bool, error) {
		if m := mismatches(scrape(t, r.op), terminated); len(m) > 0 {
			return false, fmt.Errorf("%v", m)
		}
		return true, nil
	})
	env.Eventually("the pool's usage to drop to zero", func() (bool, error) {
		v, ok := sample(scrape(t, r.op), "karpenter_nodepools_usage", map[string]string{"nodepool": np.Name, "resource_type": "nodes"})
		return ok && v == 0, nil
	})

	resp, err := http.Get("http://" + r.op.HealthAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}
}

// TestLeaderElection runs two operators on one lease: only the leader
// reconciles, and when its context ends the other takes over within the
// lease duration.
func TestLeaderElection(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Create(controllerstest.NodePool("team-a"))
	opts := testOptions(env.Prefix)
	a := start(t, env, cp.RESTConfig(), opts)
	b := start(t, env, cp.RESTConfig(), opts)
	env.Eventually("one leader", func() (bool, error) { return elected(a.op) || elected(b.op), nil })
	leader, follower := a, b
	if elected(b.op) {
		leader, follower = b, a
	}
	if elected(follower.op) {
		t.Fatal("both operators lead")
	}

	creates := func(r *running) float64 {
		v, _ := sample(scrape(t, r.op), "dovetail_cloudprovider_calls_total",
			map[string]string{"controller": "nodeclaim.lifecycle", "method": "Create", "outcome": "success"})
		return v
	}
	first := controllerstest.NodeClaim("first", "team-a")
	env.Create(first)
	env.Eventually("the leader to launch", func() (bool, error) {
		err := env.Get(first)
		return first.IsTrue(karpv1.ConditionTypeLaunched), err
	})
	if got := creates(leader); got != 1 {
		t.Errorf("leader launched %v times, want 1", got)
	}
	if fams := scrape(t, follower.op); fams["dovetail_cloudprovider_calls_total"] != nil {
		t.Errorf("the follower called the cloud: %v", fams["dovetail_cloudprovider_calls_total"])
	}

	lost := time.Now()
	leader.stop(t)
	env.Eventually("the follower to take over", func() (bool, error) { return elected(follower.op), nil })
	if took := time.Since(lost); took > opts.LeaderElection.LeaseDuration {
		t.Errorf("takeover took %s, more than the lease duration %s", took, opts.LeaderElection.LeaseDuration)
	} else {
		t.Logf("takeover in %s", took.Round(time.Millisecond))
	}
	second := controllerstest.NodeClaim("second", "team-a")
	env.Create(second)
	env.Eventually("the new leader to launch", func() (bool, error) {
		err := env.Get(second)
		return second.IsTrue(karpv1.ConditionTypeLaunched), err
	})
	if got := creates(follower); got != 1 {
		t.Errorf("new leader launched %v times, want 1 (only the new NodeClaim)", got)
	}
}
