package counter_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/counter"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/readiness"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

func TestCountNodeClaims(t *testing.T) {
	q := resource.MustParse
	launched := func(name, ct, it, price string, capacity corev1.ResourceList) karpv1.NodeClaim {
		nc := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			karpv1.CapacityTypeLabelKey: ct, corev1.LabelInstanceTypeStable: it,
		}, Annotations: map[string]string{"dovetail.sh/price-per-hour": price}}}
		nc.Status.ProviderID = "fake:///z/" + name
		nc.Status.Capacity = capacity
		return nc
	}
	a := launched("a", "spot", "m5.large", "0.03", corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("8Gi")})
	b := launched("b", "on-demand", "m5.large", "0.1", corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("8Gi")})
	c := launched("c", "on-demand", "g4dn.xlarge", "0.5", corev1.ResourceList{corev1.ResourceCPU: q("4"), "nvidia.com/gpu": q("1")})
	pending := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}
	nodeOfB := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("7Gi")}}}

	got := counter.CountNodeClaims([]*karpv1.NodeClaim{&a, &b, &c, &pending}, map[string]*corev1.Node{b.Status.ProviderID: nodeOfB})
	want := corev1.ResourceList{
		corev1.ResourceCPU:    q("8"),
		corev1.ResourceMemory: q("15Gi"), // 8Gi estimated for a, 7Gi reported by b's node
		"nvidia.com/gpu":      q("1"),
		counter.ResourceNodes: q("3"),
	}
	if len(got.Resources) != len(want) {
		t.Fatalf("resources %v, want %v", got.Resources, want)
	}
	for name, w := range want {
		if g := got.Resources[name]; g.Cmp(w) != 0 {
			t.Errorf("%s = %s, want %s", name, g.String(), w.String())
		}
	}
	if got.Nodes != 3 || got.ByType["on-demand"]["m5.large"] != 1 || got.ByType["spot"]["m5.large"] != 1 || got.ByType["on-demand"]["g4dn.xlarge"] != 1 {
		t.Errorf("nodes %d, by type %v", got.Nodes, got.ByType)
	}
	if math.Abs(got.CostPerHour-0.63) > 1e-9 {
		t.Errorf("cost %v, want 0.63", got.CostPerHour)
	}
}

// TestKubectlShowsTheCountedPool is the user's view: after two launches
// `kubectl get nodepool -o wide` shows NODES, READY, CPU and MEMORY, and
// the metrics agree; after a deletion the count drops.
func TestKubectlShowsTheCountedPool(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	env.Start(
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}),
		termination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		readiness.NewController(kube, env.Clock, readiness.Options{}),
		counter.NewController(kube, env.Metrics),
	)
	class := controllerstest.EC2NodeClass("default")
	env.Create(class)
	for _, c := range awsv1.ReadyDependents {
		class.SetCondition(c, metav1.ConditionTrue, "Resolved", "", env.Clock.Now())
	}
	if err := env.Client.Status().Update(env.Context(), class); err != nil {
		t.Fatal(err)
	}
	np := controllerstest.NodePool("team-a")
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	env.Create(np)
	small := controllerstest.NodeClaim("small", np.Name)
	big := controllerstest.NodeClaim("big", np.Name, controllerstest.Requirement(corev1.LabelInstanceTypeStable, "c5.xlarge"))
	env.Create(small)
	env.Create(big)

	env.Eventually("2 nodes counted", func() (bool, error) {
		err := env.Get(np)
		return np.Status.Nodes != nil && *np.Status.Nodes == 2, err
	})
	row := kubectlRow(t, np.Name)
	for col, want := range map[string]string{"NODES": "2", "READY": "True", "CPU": "6", "MEMORY": "16Gi", "NODECLASS": "default"} {
		if row[col] != want {
			t.Errorf("kubectl column %s = %q, want %q (row %v)", col, row[col], want, row)
		}
	}
	checks := map[string][2]float64{
		"usage cpu":           {metricstest.Value(t, env.Metrics.NodePoolUsage.WithLabelValues("cpu", np.Name)), 6},
		"usage nodes":         {metricstest.Value(t, env.Metrics.NodePoolUsage.WithLabelValues("nodes", np.Name)), 2},
		"limit cpu":           {metricstest.Value(t, env.Metrics.NodePoolLimit.WithLabelValues("cpu", np.Name)), 100},
		"m5.large on-demand":  {metricstest.Value(t, env.Metrics.NodePoolNodes.WithLabelValues(np.Name, "on-demand", "m5.large")), 1},
		"c5.xlarge on-demand": {metricstest.Value(t, env.Metrics.NodePoolNodes.WithLabelValues(np.Name, "on-demand", "c5.xlarge")), 1},
		"cost per hour (USD)": {metricstest.Value(t, env.Metrics.NodePoolCostPerHour.WithLabelValues(np.Name)), 0.096 + 0.17},
		"peer's cost (USD/h)": {metricstest.Value(t, env.Metrics.NodePoolCost.WithLabelValues(np.Name)), 0.096 + 0.17},
		"info (team label)":   {metricstest.Value(t, env.Metrics.NodePoolInfo.WithLabelValues(np.Name, np.Spec.Template.Labels["team"])), 1},
	}
	// A node of the pool with a pod bound to it: its allocatable and the
	// pod's requests are exported per node.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: np.Name + "-node", Labels: map[string]string{
		karpv1.NodePoolLabelKey: np.Name, karpv1.CapacityTypeLabelKey: "on-demand", corev1.LabelInstanceTypeStable: "m5.large"}}}
	env.Create(node)
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("29")}
	node.Status.Capacity = node.Status.Allocatable
	if err := env.Client.Status().Update(env.Context(), node); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: np.Name + "-pod", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")}}}}}}
	env.Create(pod)
	cpuOfNode := prometheus.Labels{metrics.LabelNodeName: node.Name, metrics.LabelNodePool: np.Name, metrics.LabelResourceType: "cpu",
		metrics.LabelCapacityType: "on-demand", metrics.LabelInstanceType: "m5.large", metrics.LabelZone: ""}
	env.Eventually("per-node allocatable and requests", func() (bool, error) {
		a, r := metricstest.Value(t, metricstest.With(env.Metrics.Nodes.Allocatable, cpuOfNode)), metricstest.Value(t, metricstest.With(env.Metrics.Nodes.Requests, cpuOfNode))
		if math.Abs(a-1.93) < 1e-9 && math.Abs(r-0.7) < 1e-9 {
			return true, nil
		}
		return false, fmt.Errorf("allocatable %v, requests %v", a, r)
	})
	// A pod's update recounts its node (a finished pod requests nothing);
	// the node's deletion drops its series.
	pod.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(env.Context(), pod); err != nil {
		t.Fatal(err)
	}
	env.Eventually("the finished pod's requests to go", func() (bool, error) {
		r := metricstest.Value(t, metricstest.With(env.Metrics.Nodes.Requests, cpuOfNode))
		if r != 0 {
			return false, fmt.Errorf("requests %v", r)
		}
		return true, nil
	})
	env.Delete(pod)
	env.Delete(node)
	env.Eventually("the deleted node's series to go", func() (bool, error) {
		a, r := metricstest.Count(env.Metrics.Nodes.Allocatable), metricstest.Count(env.Metrics.Nodes.Requests)
		if a+r > 0 {
			return false, fmt.Errorf("%d allocatable and %d request series left", a, r)
		}
		return true, nil
	})
	for name, c := range checks {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}

	env.Delete(big)
	env.Eventually("1 node counted", func() (bool, error) {
		err := env.Get(np)
		return np.Status.Nodes != nil && *np.Status.Nodes == 1, err
	})
	if v := metricstest.Count(env.Metrics.NodePoolNodes); v != 1 {
		t.Errorf("%d node-mix series after the deletion, want 1", v)
	}
	env.Delete(np)
	env.Eventually("the pool's series to go", func() (bool, error) {
		return metricstest.Count(env.Metrics.NodePoolCostPerHour) == 0, nil
	})
}

// kubectlRow runs `kubectl get nodepool NAME -o wide` and maps headers to
// the values of its one row.
func kubectlRow(t *testing.T, name string) map[string]string {
	t.Helper()
	out, err := cp.Kubectl(context.Background(), "get", "nodepool", name, "-o", "wide").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("unexpected kubectl output:\n%s", out)
	}
	// Columns are aligned under their headers; empty cells are blanks.
	header, values := lines[0], lines[1]+strings.Repeat(" ", len(lines[0]))
	row := map[string]string{}
	fields := strings.Fields(header)
	for i, h := range fields {
		start := strings.Index(header, h)
		end := len(header)
		if i+1 < len(fields) {
			end = strings.Index(header, fields[i+1])
		}
		if i+1 == len(fields) {
			end = len(values)
		}
		row[h] = strings.TrimSpace(values[start:end])
	}
	return row
}

// TestPodRequests sums active pods' requests (init containers as the
// scheduler counts them) and counts them.
func TestPodRequests(t *testing.T) {
	q := resource.MustParse
	pod := func(phase corev1.PodPhase, cpu, initCPU string) corev1.Pod {
		p := corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q(cpu)}}}}
		if initCPU != "" {
			p.Spec.InitContainers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q(initCPU)}}}}
		}
		return p
	}
	got := counter.PodRequests([]corev1.Pod{pod(corev1.PodRunning, "500m", ""), pod(corev1.PodRunning, "250m", "2"), pod(corev1.PodSucceeded, "4", "")})
	if c, n := got[corev1.ResourceCPU], got[corev1.ResourcePods]; c.Cmp(q("2500m")) != 0 || n.Value() != 2 {
		t.Fatalf("requests %v, want cpu 2500m (500m + max(250m, 2)) and 2 pods", got)
	}
}

// TestClusterStateNodeCount: karpenter_cluster_state_node_count counts
// every Node (a node without a provider id by its name) and every launched
// NodeClaim, one per provider id: a NodeClaim and its Node count once, a
// NodeClaim that has not launched not at all.
func TestClusterStateNodeCount(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(counter.NewController(env.Manager.GetClient(), env.Metrics))
	// Other tests' objects may be left: start from what the API server
	// holds, once the count agrees with it.
	var base float64
	env.Eventually("the count to agree with the API server", func() (bool, error) {
		var nodes corev1.NodeList
		var claims karpv1.NodeClaimList
		if err := env.Client.List(env.Context(), &nodes); err != nil {
			return false, err
		}
		if err := env.Client.List(env.Context(), &claims); err != nil {
			return false, err
		}
		ids := map[string]bool{}
		for _, n := range nodes.Items {
			ids[cmp.Or(n.Spec.ProviderID, n.Name)] = true
		}
		for _, c := range claims.Items {
			if c.Status.ProviderID != "" {
				ids[c.Status.ProviderID] = true
			}
		}
		base = float64(len(ids))
		if v := metricstest.Value(t, env.Metrics.ClusterStateNodeCount); v != base {
			return false, fmt.Errorf("count %v, API server %v", v, base)
		}
		return true, nil
	})
	launched := func(name, providerID string) {
		nc := controllerstest.NodeClaim(name, "team-n")
		env.Create(nc)
		if providerID == "" {
			return
		}
		nc.Status.ProviderID = providerID
		if err := env.Client.Status().Update(env.Context(), nc); err != nil {
			t.Fatal(err)
		}
	}
	launched(env.Prefix+"-joined", "fake:///joined")
	launched(env.Prefix+"-launching", "fake:///launching")
	launched(env.Prefix+"-not-launched", "")
	env.Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-joined"}, Spec: corev1.NodeSpec{ProviderID: "fake:///joined"}})
	env.Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-unmanaged"}})
	env.Eventually("3 nodes in the count", func() (bool, error) {
		if v := metricstest.Value(t, env.Metrics.ClusterStateNodeCount); v != base+3 {
			return false, fmt.Errorf("count %v, want %v", v, base+3)
		}
		return true, nil
	})
}
