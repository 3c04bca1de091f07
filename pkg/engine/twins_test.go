package engine_test

import (
	"math"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Pools that differ only in name, template label values and limits (twins)
// share one compile and are tried as one pool that overflows in name order;
// nothing that tells them apart may be lost.
func TestTwinPools(t *testing.T) {
	types := testTypes() // one list: pools of one node class share it
	twin := func(name string, labels map[string]string, limits corev1.ResourceList) engine.NodePool {
		return engine.NodePool{Name: name, InstanceTypes: types, Labels: labels, Limits: limits,
			Requirements: requirements.NewRequirements(req(corev1.LabelArchStable, requirements.In, "amd64"))}
	}
	oneNode := corev1.ResourceList{"nodes": resource.MustParse("1")}
	poolsOf := func(plan *engine.Plan) map[string]int {
		out := map[string]int{}
		for _, c := range plan.NodeClaims {
			out[c.NodePool]++
			if got := c.Labels["karpenter.sh/nodepool"]; got != c.NodePool {
				t.Errorf("claim %s of pool %s is labelled nodepool=%s", c.Name, c.NodePool, got)
			}
		}
		return out
	}

	t.Run("limits overflow to the next twin", func(t *testing.T) {
		in := &engine.Input{
			NodePools: []engine.NodePool{twin("c", nil, nil), twin("a", nil, oneNode), twin("b", nil, oneNode)},
			Pods:      replicas(4, "web", "1", "1Gi", withLabels("app", "web"), withAnti(corev1.LabelHostname, sel("app", "web"))),
		}
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		got := poolsOf(plan)
		if got["a"] != 1 || got["b"] != 1 || got["c"] != 2 || len(plan.Unschedulable) != 0 {
			t.Fatalf("claims per pool = %v (unschedulable %d), want a:1 b:1 c:2", got, len(plan.Unschedulable))
		}
	})

	t.Run("a template label tells twins apart", func(t *testing.T) {
		in := &engine.Input{
			NodePools: []engine.NodePool{twin("a", map[string]string{"team": "a"}, nil), twin("b", map[string]string{"team": "b"}, nil)},
			Pods: []*corev1.Pod{
				newPod("mine", "1", "1Gi", withNodeSelector("team", "b")),
				newPod("any", "1", "1Gi", withNodeSelector("team", "a")),
			},
		}
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		for pod, want := range map[string]string{"mine": "b", "any": "a"} {
			c := claimOf(plan, pod)
			if c == nil || c.NodePool != want || c.Labels["team"] != want {
				t.Fatalf("pod %s: claim %+v, want pool %s labelled team=%s", pod, c, want, want)
			}
		}
	})

	t.Run("a daemonset selecting a template label", func(t *testing.T) {
		// The daemonset fits no type of pool a, so a can make no node; b,
		// a twin but for the label's value, must not inherit that.
		in := &engine.Input{
			NodePools:  []engine.NodePool{twin("a", map[string]string{"team": "a"}, nil), twin("b", map[string]string{"team": "b"}, nil)},
			DaemonSets: []*appsv1.DaemonSet{daemonSet("huge", "1000", "1Gi", map[string]string{"team": "a"})},
			Pods:       []*corev1.Pod{newPod("p", "1", "1Gi")},
		}
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if c := claimOf(plan, "p"); c == nil || c.NodePool != "b" {
			t.Fatalf("claim %+v, want one of pool b", c)
		}
	})

	t.Run("taints tell twins apart", func(t *testing.T) {
		tainted := func(name string) engine.NodePool {
			np := twin(name, nil, nil)
			np.Taints = []corev1.Taint{{Key: "team", Value: name, Effect: corev1.TaintEffectNoSchedule}}
			return np
		}
		// The daemonset tolerates only a's taint and fits none of a's
		// types: a can make no node, b (which it does not run on) can.
		huge := daemonSet("huge", "1000", "1Gi", nil)
		huge.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}
		both := func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "team", Operator: corev1.TolerationOpExists})
		}
		in := &engine.Input{
			NodePools:  []engine.NodePool{tainted("a"), tainted("b"), tainted("c")},
			DaemonSets: []*appsv1.DaemonSet{huge},
			Pods:       []*corev1.Pod{newPod("pc", "1", "1Gi", withToleration("team", "c")), newPod("any", "1", "1Gi", both), newPod("none", "1", "1Gi")},
		}
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if c := claimOf(plan, "pc"); c == nil || c.NodePool != "c" || len(c.Taints) != 1 || c.Taints[0].Value != "c" {
			t.Fatalf("pod pc: claim %+v, want pool c with its taint", c)
		}
		if c := claimOf(plan, "any"); c == nil || c.NodePool == "a" || len(c.Taints) != 1 || c.Taints[0].Value != c.NodePool {
			t.Fatalf("pod any: claim %+v, want pool b or c (a's daemonset fits no type) with its taint", c)
		}
		if unschedulableOf(plan, "none") == nil {
			t.Fatalf("pod none tolerates no pool's taint but was placed")
		}
	})

	t.Run("twins plan as one pool", func(t *testing.T) {
		pods := append(replicas(20, "web", "500m", "1Gi"), replicas(7, "big", "3", "6Gi")...)
		one, err := engine.Solve(&engine.Input{NodePools: []engine.NodePool{twin("p0", nil, nil)}, Pods: pods})
		if err != nil {
			t.Fatal(err)
		}
		var many []engine.NodePool
		for _, name := range []string{"p0", "p1", "p2", "p3", "p4"} {
			many = append(many, twin(name, map[string]string{"x": name}, nil))
		}
		five, err := engine.Solve(&engine.Input{NodePools: many, Pods: pods})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(one.PricePerHour-five.PricePerHour) > 1e-9 || len(five.Unschedulable) != 0 {
			t.Fatalf("five twins cost $%.4f/h (%d unschedulable), one pool $%.4f/h", five.PricePerHour, len(five.Unschedulable), one.PricePerHour)
		}
		if got := poolsOf(five); got["p0"] != len(five.NodeClaims) {
			t.Fatalf("claims per pool = %v, want all in p0 (the first twin)", got)
		}
	})
}
