package podevents_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/podevents"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

func TestIsPodEvent(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		p.Spec.NodeName, p.Status.Phase = node, phase
		if deleting {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(now))
		}
		return p
	}
	ds := func(p *corev1.Pod) *corev1.Pod {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
		return p
	}
	fresh := pod("n", corev1.PodPending, false)
	fresh.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
	tests := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"bound", pod("", corev1.PodPending, false), pod("n", corev1.PodPending, false), true},
		{"status change on a bound pod", pod("n", corev1.PodPending, false), pod("n", corev1.PodRunning, false), false},
		{"succeeded", pod("n", corev1.PodRunning, false), pod("n", corev1.PodSucceeded, false), true},
		{"failed", pod("n", corev1.PodRunning, false), pod("n", corev1.PodFailed, false), true},
		{"already terminal", pod("n", corev1.PodFailed, false), pod("n", corev1.PodFailed, true), true},
		{"terminating", pod("n", corev1.PodRunning, false), pod("n", corev1.PodRunning, true), true},
		{"still terminating", pod("n", corev1.PodRunning, true), pod("n", corev1.PodRunning, true), false},
		{"unbound pod deleted", pod("", corev1.PodPending, false), nil, false},
		{"running pod deleted at once", pod("n", corev1.PodRunning, false), nil, true},
		{"terminating pod finally deleted", pod("n", corev1.PodRunning, true), nil, false},
		{"DaemonSet pod bound", ds(pod("", corev1.PodPending, false)), ds(pod("n", corev1.PodPending, false)), false},
		{"DaemonSet pod deleted", ds(pod("n", corev1.PodRunning, false)), nil, false},
		{"old bound pod replayed at start-up", nil, pod("n", corev1.PodRunning, false), false},
		{"pod created bound just now", nil, fresh, true},
		{"unbound pod created", nil, pod("", corev1.PodPending, false), false},
	}
	for _, tt := range tests {
		if got := podevents.IsPodEvent(tt.old, tt.new, now); got != tt.want {
			t.Errorf("%s: IsPodEvent = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// fixture is a NodePool, an initialized NodeClaim and its Node, made by
// hand (no lifecycle controller: the test owns every status).
type fixture struct {
	env  *controllerstest.Env
	np   *karpv1.NodePool
	nc   *karpv1.NodeClaim
	node *corev1.Node
	ctrl *podevents.Controller
}

func setup(t *testing.T, consolidateAfter string) *fixture {
	env := controllerstest.New(t, cp.RESTConfig())
	ctrl := podevents.NewController(env.Manager.GetClient(), env.Clock)
	env.Start(ctrl)
	np := controllerstest.NodePool(env.Prefix)
	np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(consolidateAfter)
	env.Create(np)
	nc := controllerstest.NodeClaim(env.Prefix, np.Name)
	env.Create(nc)
	base := nc.DeepCopy()
	nc.Status.ProviderID = "fake:///zone-a/" + env.Prefix
	nc.Status.NodeName = env.Prefix
	nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", env.Clock.Now())
	nc.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "", env.Clock.Now())
	nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", env.Clock.Now())
	if err := env.Client.Status().Patch(env.Context(), nc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: env.Prefix, Labels: map[string]string{karpv1.NodePoolLabelKey: np.Name}},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID},
	}
	env.Create(node)
	return &fixture{env: env, np: np, nc: nc, node: node, ctrl: ctrl}
}

func (f *fixture) lastPodEvent(t *testing.T) time.Time {
	t.Helper()
	if err := f.env.Get(f.nc); err != nil {
		t.Fatal(err)
	}
	return f.nc.Status.LastPodEventTime.Time
}

func (f *fixture) consolidatable(t *testing.T) (reconcile.Result, *metav1.Condition) {
	t.Helper()
	// The running controller writes the same NodeClaim: a reconcile that
	// loses the optimistic lock to it asks for a quick requeue, and the
	// answer wanted is the one after it, so it is tried again until the
	// cache has caught up (conflicts for 10 s are a failure).
	var res reconcile.Result
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		res, err = f.ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(f.nc)})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != nodeclaimutil.ConflictRequeue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reconcile kept losing optimistic-lock races for 10 s")
		}
	}
	if err := f.env.Get(f.nc); err != nil {
		t.Fatal(err)
	}
	return res, f.nc.GetCondition(karpv1.ConditionTypeConsolidatable)
}

func TestLastPodEventTimeIsWrittenAtMostEveryTenSeconds(t *testing.T) {
	f := setup(t, "1m")
	env := f.env
	ns := env.Namespace()
	t0 := env.Clock.Now()

	// A DaemonSet pod bound to the node is no event.
	dsPod := controllerstest.Pod(ns, "ds", "")
	dsPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
	env.Create(dsPod)
	bind(t, env, dsPod, f.node.Name)
	controllerstest.Consistently(t, 300*time.Millisecond, "no event from a DaemonSet pod", func() (bool, error) {
		return f.lastPodEvent(t).IsZero(), nil
	})

	// Binding a pod is one.
	pod := controllerstest.Pod(ns, "web", "")
	env.Create(pod)
	bind(t, env, pod, f.node.Name)
	env.Eventually("lastPodEventTime after a bind", func() (bool, error) {
		return f.lastPodEvent(t).Equal(t0), nil
	})

	// Inside the window a second event is held back until the window ends.
	env.Clock.Step(3 * time.Second)
	setPhase(t, env, pod, corev1.PodSucceeded)
	res, err := f.ctrl.ReconcileNode(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(f.node)})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 7*time.Second {
		t.Errorf("an event 3 s after the last write asks again after %v, want 7s", res.RequeueAfter)
	}
	if got := f.lastPodEvent(t); !got.Equal(t0) {
		t.Errorf("lastPodEventTime moved inside the window: %v, want %v", got, t0)
	}
	env.Clock.Step(7 * time.Second)
	if _, err := f.ctrl.ReconcileNode(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(f.node)}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.lastPodEvent(t), t0.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("lastPodEventTime after the window = %v, want %v", got, want)
	}

	// Deleting a running pod at once is an event too.
	env.Clock.Step(20 * time.Second)
	other := controllerstest.Pod(ns, "api", "")
	env.Create(other)
	bind(t, env, other, f.node.Name)
	env.Eventually("lastPodEventTime after the second bind", func() (bool, error) {
		return f.lastPodEvent(t).Equal(t0.Add(30 * time.Second)), nil
	})
	env.Clock.Step(15 * time.Second)
	if err := env.Client.Delete(env.Context(), other, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	env.Eventually("lastPodEventTime after a deletion", func() (bool, error) {
		return f.lastPodEvent(t).Equal(t0.Add(45 * time.Second)), nil
	})
}

func TestConsolidatableAfterConsolidateAfter(t *testing.T) {
	f := setup(t, "30s")
	env := f.env
	initAt := f.nc.GetCondition(karpv1.ConditionTypeInitialized).LastTransitionTime.Time

	env.Clock.Step(10 * time.Second)
	res, cond := f.consolidatable(t)
	if cond != nil {
		t.Fatalf("Consolidatable 10 s after initialization with consolidateAfter 30s: %+v", cond)
	}
	if want := initAt.Add(30 * time.Second).Sub(env.Clock.Now()); res.RequeueAfter != want {
		t.Errorf("requeue after %v, want %v (when consolidateAfter passes)", res.RequeueAfter, want)
	}
	env.Clock.SetTime(initAt.Add(30 * time.Second))
	_, cond = f.consolidatable(t)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("not Consolidatable once consolidateAfter passed: %+v", cond)
	}

	// A pod event starts the wait again; the running controller sees the
	// status change and removes the condition.
	ns := env.Namespace()
	pod := controllerstest.Pod(ns, "web", "")
	env.Create(pod)
	bind(t, env, pod, f.node.Name)
	env.Eventually("Consolidatable to go after a pod event", func() (bool, error) {
		err := env.Get(f.nc)
		return !f.nc.Status.LastPodEventTime.IsZero() && f.nc.GetCondition(karpv1.ConditionTypeConsolidatable) == nil, err
	})
	last := f.nc.Status.LastPodEventTime.Time
	env.Clock.SetTime(last.Add(29 * time.Second))
	if res, cond := f.consolidatable(t); cond != nil || res.RequeueAfter != time.Second {
		t.Errorf("29 s after the pod event: condition %+v, requeue %v; want none and 1s", cond, res.RequeueAfter)
	}
	env.Clock.SetTime(last.Add(30 * time.Second))
	if _, cond := f.consolidatable(t); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("30 s after the pod event: %+v, want True", cond)
	}

	// consolidateAfter: Never removes it, the running controller reacting
	// to the pool's change.
	base := f.np.DeepCopy()
	f.np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	if err := env.Client.Patch(env.Context(), f.np, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	env.Eventually("Consolidatable to go with consolidateAfter: Never", func() (bool, error) {
		err := env.Get(f.nc)
		return f.nc.GetCondition(karpv1.ConditionTypeConsolidatable) == nil, err
	})
	env.Clock.Step(1000 * time.Hour)
	if res, cond := f.consolidatable(t); cond != nil || res.RequeueAfter != 0 {
		t.Errorf("with Never: condition %+v, requeue %v; want none", cond, res.RequeueAfter)
	}
}

func bind(t *testing.T, env *controllerstest.Env, pod *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := env.Client.SubResource("binding").Create(env.Context(), pod, b); err != nil {
		t.Fatalf("binding %s to %s: %v", pod.Name, node, err)
	}
}

func setPhase(t *testing.T, env *controllerstest.Env, pod *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	if err := env.Get(pod); err != nil {
		t.Fatal(err)
	}
	base := pod.DeepCopy()
	pod.Status.Phase = phase
	if err := env.Client.Status().Patch(env.Context(), pod, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}
