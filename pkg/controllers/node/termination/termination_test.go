package termination_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

// setup runs lifecycle and both termination controllers; the node
// termination controller reads clk (the Env's fake clock, or a real one
// for tests that need eviction backoff to elapse).
func setup(t *testing.T, realClock bool, opts termination.Options) (*controllerstest.Env, *termination.Controller) {
	env := controllerstest.New(t, cp.RESTConfig())
	var clk clock.Clock = env.Clock
	if realClock {
		clk = clock.RealClock{}
	}
	kube := env.Manager.GetClient()
	nodeTerm := termination.NewController(kube, env.Cloud, clk, env.Recorder(), env.Metrics, opts)
	env.Start(
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}),
		nctermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		nodeTerm,
	)
	env.StartKubelet(controllerstest.KubeletOptions{})
	return env, nodeTerm
}

// launch creates a NodeClaim and waits until it is Ready; it returns the
// NodeClaim and its Node.
func launch(t *testing.T, env *controllerstest.Env, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	env.Create(nc)
	env.Eventually("the NodeClaim to be Ready", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		return nc.IsTrue(karpv1.ConditionTypeReady), nil
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
	if err := env.Get(node); err != nil {
		t.Fatal(err)
	}
	return nc, node
}

func runningPod(t *testing.T, env *controllerstest.Env, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	env.Create(p)
	env.Eventually("pod "+p.Name+" to run", func() (bool, error) {
		if err := env.Get(p); err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return p
}

func gone(env *controllerstest.Env, objs ...client.Object) func() (bool, error) {
	return func() (bool, error) {
		for _, o := range objs {
			if ok, err := env.NotFound(o); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

func exists(env *controllerstest.Env, objs ...client.Object) func() (bool, error) {
	return func() (bool, error) {
		for _, o := range objs {
			if err := env.Get(o); err != nil {
				return false, err
			}
			if !o.GetDeletionTimestamp().IsZero() {
				return false, nil
			}
		}
		return true, nil
	}
}

// TestDeleteNodeDrainsInOrderHonouringPDBs is `kubectl delete node`: the
// PDB holds the web pods while the DaemonSet and critical pods wait their
// turn; once the PDB allows it, pods go in group order, then the instance,
// the Node and the NodeClaim.
func TestDeleteNodeDrainsInOrderHonouringPDBs(t *testing.T) {
	env, _ := setup(t, true, termination.Options{})
	ns := env.Namespace()
	nc, node := launch(t, env, controllerstest.NodeClaim("drain", "team-a"))

	web1 := runningPod(t, env, controllerstest.Pod(ns, "web-1", node.Name))
	web2 := controllerstest.Pod(ns, "web-2", node.Name)
	web2.Labels["app"] = "web-1"
	runningPod(t, env, web2)
	critical := controllerstest.Pod(ns, "critical", node.Name)
	critical.Spec.PriorityClassName = "system-cluster-critical"
	runningPod(t, env, critical)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelHostname: node.Labels[corev1.LabelHostname]},
					Containers:   []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	env.Create(ds)
	var dsPod *corev1.Pod
	env.Eventually("the DaemonSet pod to run on the node", func() (bool, error) {
		var pods corev1.PodList
		if err := env.Client.List(env.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": "agent"}); err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning {
				dsPod = p
				return true, nil
			}
		}
		return false, nil
	})
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web-1"}}}},
			MinAvailable: ptr.To(intstr.FromInt32(2)),
		},
	}
	env.Create(pdb)
	env.Eventually("the PDB to count both web pods", func() (bool, error) {
		if err := env.Get(pdb); err != nil {
			return false, err
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 2 && pdb.Status.DisruptionsAllowed == 0, nil
	})

	env.Delete(node) // kubectl delete node

	env.Eventually("the NodeClaim to be deleted and the node tainted", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		if err := env.Get(node); err != nil {
			return false, err
		}
		tainted := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
		return !nc.DeletionTimestamp.IsZero() && tainted, nil
	})
	env.EventuallyEventAbout(web1, termination.ReasonEvictionBlocked)
	// While the PDB says no, nothing of a later group goes either.
	controllerstest.Consistently(t, 2*time.Second, "the PDB and group order to hold every pod", exists(env, web1, web2, critical, dsPod))
	if err := env.Get(nc); err != nil {
		t.Fatal(err)
	}
	if c := nc.GetCondition(karpv1.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionFalse || c.Reason != termination.ReasonDraining {
		t.Errorf("Drained = %+v, want False/Draining", c)
	}
	if v := metricstest.Value(t, env.Metrics.PodsEvictionRequests.WithLabelValues("429")); v < 2 {
		t.Errorf("429 evictions = %v, want at least one per web pod", v)
	}
	if len(env.Cloud.Instances()) != 1 {
		t.Fatal("instance terminated before the drain")
	}

	// Let the PDB allow everything.
	base := pdb.DeepCopy()
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(0))
	if err := env.Client.Patch(env.Context(), pdb, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	env.Eventually("node, NodeClaim and pods to be gone", gone(env, node, nc, web1, web2, critical, dsPod))
	if n := len(env.Cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}

	// Evicted events, in time order, follow the groups.
	order := evictionOrder(env, web1, web2, critical, dsPod)
	group := map[string]int{web1.Name: 0, web2.Name: 0, dsPod.Name: 1, critical.Name: 2}
	for i := 1; i < len(order); i++ {
		if group[order[i-1]] > group[order[i]] {
			t.Fatalf("eviction order %v breaks the group order (web, DaemonSet, critical)", order)
		}
	}
	if len(order) != 4 {
		t.Fatalf("evicted %v, want all four pods", order)
	}
	if v := metricstest.Value(t, env.Metrics.NodesTerminated.WithLabelValues("team-a", controllerstest.ZoneA)); v != 1 {
		t.Errorf("nodes terminated = %v", v)
	}
	if v := metricstest.Value(t, env.Metrics.NodeClaimsTerminated.WithLabelValues("team-a", karpv1.CapacityTypeOnDemand, controllerstest.ZoneA)); v != 1 {
		t.Errorf("nodeclaims terminated = %v", v)
	}
	if v := metricstest.Value(t, env.Metrics.NodesTerminationDuration.WithLabelValues("team-a").(prometheus.Collector)); v != 1 {
		t.Errorf("termination duration samples = %v", v)
	}
}

func evictionOrder(env *controllerstest.Env, pods ...*corev1.Pod) []string {
	type ev struct {
		name string
		at   time.Time
	}
	var evs []ev
	for _, p := range pods {
		for _, e := range env.EventsAbout(p) {
			if e.Reason == termination.ReasonEvicted {
				evs = append(evs, ev{p.Name, e.EventTime.Time})
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.name
	}
	return out
}

// TestTerminationGracePeriodDeletesProtectedPodsInTime is `kubectl delete
// nodeclaim` with a terminationGracePeriod: a do-not-disrupt pod is not
// evicted, but is deleted at the deadline minus its own grace period.
func TestTerminationGracePeriodDeletesProtectedPodsInTime(t *testing.T) {
	env, nodeTerm := setup(t, false, termination.Options{})
	ns := env.Namespace()
	nc := controllerstest.NodeClaim("tgp", "team-a")
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 2 * time.Minute}
	nc, node := launch(t, env, nc)
	p := controllerstest.Pod(ns, "batch", node.Name)
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(30))
	runningPod(t, env, p)

	env.Delete(nc) // kubectl delete nodeclaim
	var deadline time.Time
	env.Eventually("the termination deadline annotation", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		s, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
		if !ok {
			return false, nil
		}
		var err error
		deadline, err = time.Parse(time.RFC3339, s)
		return err == nil, err
	})
	if want := nc.DeletionTimestamp.Add(2 * time.Minute); !deadline.Equal(want) {
		t.Fatalf("deadline %s, want deletion time + 2m = %s", deadline, want)
	}
	env.Eventually("Drained=False while the protected pod stays", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		c := nc.GetCondition(karpv1.ConditionTypeDrained)
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
	controllerstest.Consistently(t, time.Second, "the do-not-disrupt pod to stay", exists(env, p))
	for _, e := range env.EventsAbout(p) {
		if e.Reason == termination.ReasonEvicted {
			t.Fatal("a do-not-disrupt pod was evicted")
		}
	}

	// Just before deadline - 30s nothing happens; at it, the pod is deleted.
	env.Clock.SetTime(deadline.Add(-31 * time.Second))
	reconcileNode(t, nodeTerm, node)
	controllerstest.Consistently(t, 500*time.Millisecond, "the pod to stay before its delete time", exists(env, p))
	env.Clock.SetTime(deadline.Add(-30 * time.Second))
	reconcileNode(t, nodeTerm, node)
	ev := env.EventuallyEventAbout(p, termination.ReasonTerminationGracePeriodExpired)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s", ev.Type)
	}
	env.Eventually("pod, node and NodeClaim to be gone", gone(env, p, node, nc))
	if n := len(env.Cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}
}

func reconcileNode(t *testing.T, c *termination.Controller, node *corev1.Node) reconcile.Result {
	t.Helper()
	res, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDoNotDisruptDurationEndsTheWaitOnTime is the peer's DoNotDisrupt
// grace-period spec: a pod annotated karpenter.sh/do-not-disrupt: "1m" on
// a deleted NodeClaim stays for its minute, counted from the pod's start,
// and the drain wakes when the minute ends to evict it (not at some later
// periodic requeue).
func TestDoNotDisruptDurationEndsTheWaitOnTime(t *testing.T) {
	env, nodeTerm := setup(t, false, termination.Options{})
	ns := env.Namespace()
	nc, node := launch(t, env, controllerstest.NodeClaim("dnd", "team-a"))
	p := controllerstest.Pod(ns, "short", node.Name)
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "1m"}
	p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	runningPod(t, env, p)
	if p.Status.StartTime == nil {
		t.Fatal("the running pod has no status.startTime")
	}
	until := p.Status.StartTime.Add(time.Minute)

	env.Delete(nc)
	env.Eventually("Drained=False while the protected pod stays", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		c := nc.GetCondition(karpv1.ConditionTypeDrained)
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
	env.Clock.SetTime(until.Add(-time.Second))
	res := reconcileNode(t, nodeTerm, node)
	if want := until.Sub(env.Clock.Now()); res.RequeueAfter != want {
		t.Errorf("the drain asks to run again after %s, want %s (when the pod's minute ends)", res.RequeueAfter, want)
	}
	controllerstest.Consistently(t, 500*time.Millisecond, "the protected pod to stay before its minute ends", exists(env, p))
	env.Clock.SetTime(until)
	reconcileNode(t, nodeTerm, node)
	env.EventuallyEventAbout(p, termination.ReasonEvicted)
	env.Eventually("pod, node and NodeClaim to be gone", gone(env, p, node, nc))
}

// TestVolumeAttachmentsHoldTheInstance: the instance is terminated only
// once the node's VolumeAttachments are gone, or when the bounded wait
// ends.
func TestVolumeAttachmentsHoldTheInstance(t *testing.T) {
	tests := []struct {
		name     string
		timedOut bool
	}{
		{"until detached", false},
		{"until the wait times out", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, nodeTerm := setup(t, false, termination.Options{VolumeDetachTimeout: time.Minute})
			nc, node := launch(t, env, controllerstest.NodeClaim("volumes", "team-a"))
			va := &storagev1.VolumeAttachment{
				ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-va"},
				Spec: storagev1.VolumeAttachmentSpec{
					Attacher: "ebs.csi.aws.com",
					Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + env.Prefix)},
					NodeName: node.Name,
				},
			}
			env.Create(va)
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), va) })

			env.Delete(nc)
			env.Eventually("VolumesDetached=False after the drain", func() (bool, error) {
				if err := env.Get(nc); err != nil {
					return false, err
				}
				c := nc.GetCondition(karpv1.ConditionTypeVolumesDetached)
				return nc.IsTrue(karpv1.ConditionTypeDrained) && c != nil && c.Status == metav1.ConditionFalse &&
					c.Reason == termination.ReasonAwaitingVolumeDetachment, nil
			})
			controllerstest.Consistently(t, time.Second, "the instance and node to stay", func() (bool, error) {
				return len(env.Cloud.Instances()) == 1, nil
			})
			if tt.timedOut {
				env.Clock.Step(time.Minute + time.Second)
				reconcileNode(t, nodeTerm, node)
			} else {
				env.Delete(va)
			}
			env.Eventually("node and NodeClaim to be gone", gone(env, node, nc))
			if n := len(env.Cloud.Instances()); n != 0 {
				t.Fatalf("%d instances left", n)
			}
			if tt.timedOut {
				if ok, _ := env.NotFound(va); ok {
					t.Fatal("the attachment vanished; the test proves nothing")
				}
			}
		})
	}
}

// TestNodeWritesNeedNoFreshCopy: the taint and the finalizer's removal go
// through on a copy of the node older than the server's (a kubelet's
// status update in between, as the cache lags behind a loaded API
// server), and keep what was written meanwhile.
func TestNodeWritesNeedNoFreshCopy(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ctx := env.Context()
	c := termination.NewController(env.Client, env.Cloud, env.Clock, env.Recorder(), env.Metrics, termination.Options{})
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-stale", Finalizers: []string{"example.com/other", karpv1.TerminationFinalizer}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "example.com/a", Effect: corev1.TaintEffectNoSchedule}}},
	}
	env.Create(node)
	stale := node.DeepCopy()
	// Meanwhile (patches: the node lifecycle controller writes the node
	// too) another taint.
	meanwhile := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/taints/-","value":{"key":"example.com/b","effect":"NoExecute"}}]`))
	if err := env.Client.Patch(ctx, node.DeepCopy(), meanwhile); err != nil {
		t.Fatal(err)
	}
	if err := termination.Taint(ctx, c, stale); err != nil {
		t.Fatalf("tainting from a stale copy: %v", err)
	}
	got := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	if err := env.Get(got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, taint := range got.Spec.Taints {
		keys = append(keys, taint.Key+":"+string(taint.Effect))
	}
	// (The node lifecycle controller may have added its own meanwhile.)
	for _, want := range []string{"example.com/a:NoSchedule", "example.com/b:NoExecute", karpv1.DisruptedTaintKey + ":NoSchedule"} {
		if !slices.Contains(keys, want) {
			t.Errorf("taints %v: no %s", keys, want)
		}
	}

	env.Delete(got) // held by the finalizers
	if err := env.Get(got); err != nil {
		t.Fatal(err)
	}
	stale = got.DeepCopy()
	touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/touched":"yes"}}}`))
	if err := env.Client.Patch(ctx, got.DeepCopy(), touch); err != nil {
		t.Fatal(err)
	}
	if err := termination.Release(ctx, c, stale); err != nil {
		t.Fatalf("releasing from a stale copy: %v", err)
	}
	if err := env.Get(got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, []string{"example.com/other"}) || got.Labels["example.com/touched"] != "yes" {
		t.Errorf("finalizers %v, labels %v after the release: want only example.com/other left and the label kept", got.Finalizers, got.Labels)
	}
}
