package poddeletioncost_test

import (
	"context"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/poddeletioncost"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

type fixture struct {
	t    *testing.T
	env  *controllerstest.Env
	pool string
	rs   *appsv1.ReplicaSet
}

// node makes an initialized NodeClaim of the pool (instance type, price)
// and its Node.
func (f *fixture) node(name, instanceType string, price float64) string {
	f.t.Helper()
	name = f.env.Prefix + "-" + name
	providerID := "aws:///us-east-1a/i-" + name
	labels := map[string]string{karpv1.NodePoolLabelKey: f.pool, corev1.LabelInstanceTypeStable: instanceType,
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelTopologyZone: "us-east-1a"}
	nc := controllerstest.NodeClaim(name, f.pool)
	for k, v := range labels {
		nc.Labels[k] = v
	}
	nc.Annotations = map[string]string{karpv1.AnnotationPricePerHour: strconv.FormatFloat(price, 'f', -1, 64)}
	f.env.Create(nc)
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = name
	nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", f.env.Clock.Now())
	if err := f.env.Client.Status().Update(f.env.Context(), nc); err != nil {
		f.t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	f.env.Create(n)
	return name
}

// pod binds a pod to node; owned by the ReplicaSet when rs.
func (f *fixture) pod(name, node string, rs bool, ann map[string]string) *corev1.Pod {
	f.t.Helper()
	p := controllerstest.Pod(f.env.Namespace(), name, node)
	p.Annotations = ann
	if rs {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: f.rs.Name, UID: f.rs.UID, Controller: ptr.To(true)}}
	}
	f.env.Create(p)
	return p
}

func (f *fixture) annotations(p *corev1.Pod) map[string]string {
	f.t.Helper()
	if err := f.env.Get(p); err != nil {
		f.t.Fatal(err)
	}
	return p.Annotations
}

func (f *fixture) cost(p *corev1.Pod) int {
	f.t.Helper()
	a := f.annotations(p)
	if a[poddeletioncost.ManagedAnnotation] != "true" {
		f.t.Fatalf("pod %s has no %s (annotations %v)", p.Name, poddeletioncost.ManagedAnnotation, a)
	}
	v, err := strconv.Atoi(a[poddeletioncost.CostAnnotation])
	if err != nil {
		f.t.Fatalf("pod %s cost %q: %v", p.Name, a[poddeletioncost.CostAnnotation], err)
	}
	return v
}

// Pod deletion costs follow the planner's drain order: pods on the node
// consolidation would drain first (the most $/h per unit of disruption)
// get the lowest cost, pods on a node a do-not-disrupt pod holds the
// highest; a user-set cost and pods no ReplicaSet owns are left alone;
// writes are capped per pass and made only when a cost changes.
func TestCostsFollowTheDrainOrder(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	pool := controllerstest.NodePool(env.Prefix)
	env.Create(pool)
	f := &fixture{t: t, env: env, pool: pool.Name}
	f.rs = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(), Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}
	env.Create(f.rs)

	dear := f.node("dear", "c5.4xlarge", 0.68)
	cheap := f.node("cheap", "m5.large", 0.096)
	held := f.node("held", "m5.xlarge", 0.192)
	d1 := f.pod("d1", dear, true, nil)
	user := f.pod("user", dear, true, map[string]string{poddeletioncost.CostAnnotation: "100"})
	bare := f.pod("bare", dear, false, nil)
	c1 := f.pod("c1", cheap, true, nil)
	h1 := f.pod("h1", held, true, nil)
	f.pod("h2", held, false, map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})

	m, err := poddeletioncost.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := poddeletioncost.New(env.Client, env.Clock, m, poddeletioncost.Options{MaxWritesPerPass: 2})
	pass := func() poddeletioncost.PassResult {
		t.Helper()
		res, err := c.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// Two writes a pass: the first-ranked nodes first, the held one waits.
	res := pass()
	if res.Ranked != 3 || res.Written != 2 || res.Pending != 1 {
		t.Fatalf("first pass %+v, want 3 nodes ranked, 2 writes, 1 node pending", res)
	}
	if v := metricstest.Value(t, m.Pending.WithLabelValues(f.pool)); v != 1 {
		t.Errorf("nodes with pending writes = %v, want 1", v)
	}
	if _, ok := f.annotations(h1)[poddeletioncost.CostAnnotation]; ok {
		t.Error("the held node's pod was written before the first-ranked nodes' were done")
	}
	res = pass()
	if res.Written != 1 || res.Pending != 0 {
		t.Fatalf("second pass %+v, want the 1 remaining write", res)
	}
	if v := metricstest.Value(t, m.Pending.WithLabelValues(f.pool)); v != 0 {
		t.Errorf("nodes with pending writes = %v, want 0", v)
	}

	cd, cc, ch := f.cost(d1), f.cost(c1), f.cost(h1)
	if !(cd < cc && cc < ch && ch < 0) {
		t.Errorf("costs dear %d, cheap %d, held %d; want dear < cheap < held < 0 (the drain order)", cd, cc, ch)
	}
	if a := f.annotations(user); a[poddeletioncost.CostAnnotation] != "100" || a[poddeletioncost.ManagedAnnotation] != "" {
		t.Errorf("the user-set cost was changed: %v", a)
	}
	if a := f.annotations(bare); a[poddeletioncost.CostAnnotation] != "" {
		t.Errorf("a pod no ReplicaSet owns got a cost: %v", a)
	}

	// Nothing changed: nothing written.
	if res := pass(); res.Written != 0 || res.Failed != 0 {
		t.Errorf("third pass %+v, want no writes (costs unchanged)", res)
	}
	if v := metricstest.Value(t, m.Writes.WithLabelValues(poddeletioncost.ResultSuccess)); v != 3 {
		t.Errorf("writes{result=success} = %v, want 3", v)
	}

	// The dear node's pods become blocked (do-not-disrupt on the node):
	// it drops to the end, and the costs are rewritten to follow.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: dear}}
	if err := env.Get(n); err != nil {
		t.Fatal(err)
	}
	n.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	if err := env.Client.Update(env.Context(), n); err != nil {
		t.Fatal(err)
	}
	pass()
	if cd, cc := f.cost(d1), f.cost(c1); cc >= cd {
		t.Errorf("after do-not-disrupt on %s: costs dear %d, cheap %d; want cheap lower", dear, cd, cc)
	}
}
