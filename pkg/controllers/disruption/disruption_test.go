package disruption_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	nodetermination "github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

type fixture struct {
	t    *testing.T
	env  *controllerstest.Env
	pool *karpv1.NodePool
	ns   string
}

// setup runs the NodeClaim lifecycle and termination controllers and the
// simulated kubelet (replacements of a disruption command never register
// when neverRegister is set), and creates a Ready NodePool.
func setup(t *testing.T, neverRegister bool, mutate func(*karpv1.NodePool)) *fixture {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Start(
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable,
			lifecycle.Options{LaunchTimeout: 24 * time.Hour, RegistrationTimeout: 24 * time.Hour}),
		nctermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		nodetermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, nodetermination.Options{}),
	)
	opts := controllerstest.KubeletOptions{}
	if neverRegister {
		opts.Skip = func(nc *karpv1.NodeClaim) bool { return nc.Labels[disruption.CommandLabelKey] != "" }
	}
	env.StartKubelet(opts)
	np := controllerstest.NodePool(env.Prefix)
	if mutate != nil {
		mutate(np)
	}
	env.Create(np)
	now := time.Now()
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
	if err := env.Client.Status().Update(env.Context(), np); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, env: env, pool: np, ns: env.Namespace()}
}

// controller is driven by hand (Pass) through the uncached client, as a
// restarted process would start: nothing in memory.
func (f *fixture) controller(opts disruption.Options) *disruption.Controller {
	return f.controllerWith(f.env.Client, opts)
}

func (f *fixture) controllerWith(kube client.Client, opts disruption.Options) *disruption.Controller {
	return disruption.New(kube, f.env.Cloud, f.env.Clock, f.env.Recorder(), f.env.Metrics, f.env.Unavailable,
		func(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string) *karpv1.NodeClaim {
			return provisioning.NewNodeClaim(np, planned, types, reason, 0)
		}, opts)
}

func (f *fixture) pass(c *disruption.Controller) {
	f.t.Helper()
	if _, err := c.Pass(context.Background()); err != nil {
		f.t.Fatalf("pass: %v", err)
	}
}

// node launches a NodeClaim of the pool for the instance type and waits
// until it is Initialized; it returns the NodeClaim and its Node.
func (f *fixture) node(name, instanceType string) (*karpv1.NodeClaim, *corev1.Node) {
	f.t.Helper()
	nc := controllerstest.NodeClaim(f.env.Prefix+"-"+name, f.pool.Name, controllerstest.Requirement(corev1.LabelInstanceTypeStable, instanceType))
	f.env.Create(nc)
	f.env.Eventually("NodeClaim "+nc.Name+" initialized", func() (bool, error) {
		err := f.env.Get(nc)
		return nc.IsTrue(karpv1.ConditionTypeInitialized), err
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
	if err := f.env.Get(node); err != nil {
		f.t.Fatal(err)
	}
	return nc, node
}

// pod binds a pod requesting cpu to the node and waits until it runs.
func (f *fixture) pod(name, node, cpu string) *corev1.Pod {
	f.t.Helper()
	p := controllerstest.Pod(f.ns, name, node)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("128Mi")}
	f.env.Create(p)
	f.env.Eventually("pod "+name+" running", func() (bool, error) {
		err := f.env.Get(p)
		return p.Status.Phase == corev1.PodRunning, err
	})
	return p
}

func hold(n *corev1.Node) *corev1.Taint {
	for i, t := range n.Spec.Taints {
		if t.Key == disruption.HoldTaintKey {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func tainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

func (f *fixture) replacements() []karpv1.NodeClaim {
	f.t.Helper()
	var list karpv1.NodeClaimList
	if err := f.env.Client.List(f.env.Context(), &list, client.HasLabels{disruption.CommandLabelKey}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// A budget of "0" inside its schedule window blocks emptiness; once the
// window closes the empty nodes go, after the validation period.
func TestBudgetScheduleWindowOpenThenClosed(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Schedule: ptr.To("0 9 * * *"), Duration: &metav1.Duration{Duration: 2 * time.Hour}}}
	})
	a, na := f.node("a", "m5.large")
	b, _ := f.node("b", "m5.large")
	c := f.controller(disruption.Options{})

	// A stale taint (no command) is lifted by any pass.
	base := na.DeepCopy()
	na.Spec.Taints = append(na.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
	if err := f.env.Client.Patch(f.env.Context(), na, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	day := f.env.Clock.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	f.env.Clock.SetTime(day.Add(9*time.Hour + 30*time.Minute)) // inside 09:00-11:00
	f.pass(c)
	if err := f.env.Get(na); err != nil || tainted(na) {
		t.Errorf("the stale disrupted taint stayed (err %v)", err)
	}
	f.pass(c)
	f.env.Clock.Step(time.Minute) // past any validation period
	f.pass(c)
	for _, nc := range []*karpv1.NodeClaim{a, b} {
		if err := f.env.Get(nc); err != nil || !nc.DeletionTimestamp.IsZero() || nc.Annotations[disruption.CommandAnnotationKey] != "" {
			t.Fatalf("%s disrupted inside a budget window of 0 (err %v)", nc.Name, err)
		}
	}
	ev := f.env.EventuallyEventAbout(na, disruption.ReasonDisruptionBlocked)
	if !strings.Contains(ev.Note, "BudgetExhausted") {
		t.Errorf("DisruptionBlocked note %q does not give the budget code", ev.Note)
	}
	if v := metricstest.Value(t, f.env.Metrics.NodePoolAllowedDisruptions.WithLabelValues(f.pool.Name, "empty")); v != 0 {
		t.Errorf("allowed disruptions for empty inside the window = %v, want 0", v)
	}

	f.env.Clock.SetTime(day.Add(11*time.Hour + 30*time.Minute)) // the window closed
	f.pass(c)                                                   // plans; Empty waits for validation
	if err := f.env.Get(a); err != nil || a.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("an Empty command started before its validation period (err %v)", err)
	}
	f.env.Clock.Step(disruption.DefaultValidationPeriod)
	f.pass(c) // validates and starts
	f.pass(c) // no replacements: deletes
	for _, nc := range []*karpv1.NodeClaim{a, b} {
		f.env.Eventually(nc.Name+" gone", func() (bool, error) { return f.env.NotFound(nc) })
	}
	if v := metricstest.Value(t, f.env.Metrics.NodeClaimsDisrupted.WithLabelValues("empty", f.pool.Name, karpv1.CapacityTypeOnDemand)); v != 2 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=empty} = %v, want 2", v)
	}
	if v := metricstest.Value(t, f.env.Metrics.DisruptionDecisionsByNodePool.WithLabelValues("delete", "empty", "empty", f.pool.Name)); v != 1 {
		t.Errorf("decisions by nodepool = %v, want 1", v)
	}
	if v := metricstest.Value(t, f.env.Metrics.DisruptionDecisions.WithLabelValues("delete", "empty", "empty")); v != 1 {
		t.Errorf("karpenter_voluntary_disruption_decisions_total{delete,empty,empty} = %v, want 1", v)
	}
	if len(f.replacements()) != 0 {
		t.Error("an Empty command launched replacements")
	}
}

// An underutilized node whose replacement never registers is kept: after
// the timeout the command is rolled back.
func TestReplacementThatNeverRegistersKeepsTheNode(t *testing.T) {
	f := setup(t, true, nil)
	big, node := f.node("big", "c5.xlarge")
	f.pod("small", node.Name, "100m")
	c := f.controller(disruption.Options{Timeout: 2 * time.Minute})

	f.env.Clock.Step(time.Second)
	f.pass(c) // held for validation
	f.env.Clock.Step(disruption.DefaultValidationPeriod)
	f.pass(c) // starts
	if err := f.env.Get(big); err != nil || big.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatalf("no command on the underutilized c5.xlarge (err %v); events: %v", err, f.env.EventsAbout(node))
	}
	if err := f.env.Get(node); err != nil || !tainted(node) {
		t.Fatalf("candidate node not tainted (err %v)", err)
	}
	if cond := big.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != "Underutilized" {
		t.Errorf("DisruptionReason = %+v, want True/Underutilized", cond)
	}
	reps := f.replacements()
	if len(reps) != 1 || reps[0].Labels[karpv1.NodePoolLabelKey] != f.pool.Name {
		t.Fatalf("replacements %d, want 1 of the pool", len(reps))
	}
	// The replacement remembers what it replaced (no A -> B -> A).
	if got := reps[0].Annotations[planner.ReplacedTypesAnnotation]; got != "c5.xlarge" {
		t.Errorf("replacement's %s = %q, want c5.xlarge", planner.ReplacedTypesAnnotation, got)
	}
	if got := reps[0].Annotations[planner.CreationReasonAnnotation]; got != "underutilized" {
		t.Errorf("replacement's %s = %q, want underutilized", planner.CreationReasonAnnotation, got)
	}
	f.env.EventuallyEventAbout(big, disruption.ReasonDisruptionLaunching)

	f.pass(c) // waiting
	f.env.EventuallyEventAbout(big, disruption.ReasonDisruptionWaitingReadiness)
	f.env.Clock.Step(2 * time.Minute)
	f.pass(c) // times out: rolled back
	if err := f.env.Get(big); err != nil || !big.DeletionTimestamp.IsZero() || big.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("after the timeout the candidate is deleting or still marked (err %v)", err)
	}
	if cond := big.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "timed out") {
		t.Errorf("DisruptionReason after rollback = %+v, want False naming the timeout", cond)
	}
	if err := f.env.Get(node); err != nil || tainted(node) {
		t.Errorf("node still tainted after the rollback (err %v)", err)
	}
	f.env.Eventually("the replacement to go", func() (bool, error) { return len(f.replacements()) == 0, nil })
	ev := f.env.EventuallyEventAbout(big, disruption.ReasonDisruptionBlocked)
	if !strings.Contains(ev.Note, "rolled back") {
		t.Errorf("rollback event note %q", ev.Note)
	}
}

// A drifted node is replaced at once (no validation); a controller
// restarted in the middle of the command finishes it without launching a
// second replacement.
func TestDriftReplacementSurvivesARestart(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	old, node := f.node("old", "m5.large")
	f.pod("web", node.Name, "1500m")
	base := old.DeepCopy()
	old.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, string(cloudprovider.DriftImage), "", f.env.Clock.Now())
	if err := f.env.Client.Status().Patch(f.env.Context(), old, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	first := f.controller(disruption.Options{})
	f.env.Clock.Step(time.Second)
	f.pass(first)
	reps := f.replacements()
	if len(reps) != 1 {
		t.Fatalf("drift started %d replacements, want 1 (events %v)", len(reps), f.env.EventsAbout(node))
	}
	if reps[0].Annotations["dovetail.sh/creation-reason"] != "drifted" {
		t.Errorf("replacement creation reason %q, want drifted", reps[0].Annotations["dovetail.sh/creation-reason"])
	}
	// "Restart": a new controller with nothing in memory drives it on.
	second := f.controller(disruption.Options{})
	f.env.Eventually("the drifted NodeClaim to be deleted once its replacement is initialized", func() (bool, error) {
		f.pass(second)
		f.env.Clock.Step(time.Second)
		gone, err := f.env.NotFound(old)
		if err != nil || gone {
			return gone, err
		}
		return !old.DeletionTimestamp.IsZero(), nil
	})
	if n := len(f.replacements()); n != 1 {
		t.Errorf("%d replacements after the restart, want 1 (none launched twice)", n)
	}
	// The replacement is held (PreferNoSchedule) while the old node's pods
	// move, and no longer once the old NodeClaim is gone.
	rep := f.replacements()[0]
	repNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: rep.Status.NodeName}}
	if err := f.env.Get(repNode); err != nil {
		t.Fatal(err)
	}
	cmdID := rep.Labels[disruption.CommandLabelKey]
	if h := hold(repNode); h == nil || h.Value != cmdID || h.Effect != corev1.TaintEffectPreferNoSchedule {
		t.Errorf("replacement node taints %v while the old node drains, want %s=%s:PreferNoSchedule", repNode.Spec.Taints, disruption.HoldTaintKey, cmdID)
	}
	f.env.Eventually("the drifted NodeClaim gone", func() (bool, error) { return f.env.NotFound(old) })
	f.pass(second)
	if err := f.env.Get(repNode); err != nil || hold(repNode) != nil {
		t.Errorf("the hold stayed on the replacement after the old NodeClaim went (taints %v, err %v)", repNode.Spec.Taints, err)
	}
	if v := metricstest.Value(t, f.env.Metrics.NodeClaimsDisrupted.WithLabelValues("drifted", f.pool.Name, karpv1.CapacityTypeOnDemand)); v != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=drifted} = %v, want 1", v)
	}
	f.env.EventuallyEventAbout(old, disruption.ReasonDisruptionTerminating)
}

// A controller killed after marking a command but before creating its
// replacement leaves an annotated, tainted node: the next controller rolls
// the command back (nothing launched from a plan it no longer has).
func TestCommandCutShortBeforeItsReplacementsIsRolledBack(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	nc, node := f.node("cut", "m5.large")
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[disruption.CommandAnnotationKey] = `{"id":"0123456789","reason":"Drifted","started":"` +
		f.env.Clock.Now().UTC().Format(time.RFC3339) + `","nodeClaims":["` + nc.Name + `"],"replacements":["` + f.pool.Name + `-0123456789-0"]}`
	if err := f.env.Client.Patch(f.env.Context(), nc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	nbase := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
	if err := f.env.Client.Patch(f.env.Context(), node, client.MergeFrom(nbase)); err != nil {
		t.Fatal(err)
	}

	f.pass(f.controller(disruption.Options{}))
	if err := f.env.Get(nc); err != nil || nc.Annotations[disruption.CommandAnnotationKey] != "" || !nc.DeletionTimestamp.IsZero() {
		t.Fatalf("the cut-short command was not rolled back (err %v, annotations %v)", err, nc.Annotations)
	}
	if cond := nc.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "is gone") {
		t.Errorf("DisruptionReason = %+v, want False saying the replacement is gone", cond)
	}
	if err := f.env.Get(node); err != nil || tainted(node) {
		t.Errorf("node left tainted (err %v)", err)
	}
	if n := len(f.replacements()); n != 0 {
		t.Errorf("%d replacements launched for a command the controller lost", n)
	}
}

// A held Empty command still starts when the new plan picked another
// empty node for the budget: its node is still empty and kept only by the
// budget (a scale-down keeps emptying nodes between the two plans).
func TestHeldEmptyCommandStartsWhenThePlanPicksAnotherEmptyNode(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	})
	first, n1 := f.node("first", "m5.large")
	second, n2 := f.node("second", "m5.large")
	if n1.Name > n2.Name {
		t.Fatalf("node %s sorts after %s", n1.Name, n2.Name)
	}
	p := f.pod("busy", n1.Name, "100m") // the first node is not empty yet
	c := f.controller(disruption.Options{})
	f.env.Clock.Step(time.Minute)
	f.pass(c) // holds an Empty command over the second node (budget 1)
	if err := f.env.Client.Delete(f.env.Context(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	f.env.Eventually("pod busy gone", func() (bool, error) { return f.env.NotFound(p) })
	// Now both are empty; the new plan picks the first node for the budget.
	f.env.Clock.Step(time.Minute)
	f.pass(c)
	if err := f.env.Get(second); err != nil || second.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatalf("the held Empty command over %s did not start (err %v, annotations %v)", n2.Name, err, second.Annotations)
	}
	if err := f.env.Get(first); err != nil || first.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("%s taken as well: the budget allows one node (err %v)", n1.Name, err)
	}
}

// The pod a command evicts comes back as a new pod of its ReplicaSet; the
// controller nominates it (status.nominatedNodeName) to the node the
// command planned for it, from the destinations kept on the command's
// annotation: a controller that never saw the command start does it.
func TestRecreatedPodsAreNominatedToTheirPlannedNodeAfterARestart(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	old, nOld := f.node("old", "m5.large")
	f.node("keep", "m5.large")
	ctx := f.env.Context()
	// The finalizer keeps the evicted pod terminating, so the old node
	// drains no further and the command stays in the cluster meanwhile.
	const hold = testHold
	f.releaseFinalizers()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Finalizers: []string{hold}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			},
		},
	}
	f.env.Create(rs)
	webPods := func() []corev1.Pod {
		var pods corev1.PodList
		if err := f.env.Client.List(ctx, &pods, client.InNamespace(f.ns), client.MatchingLabels{"app": "web"}); err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	// No scheduler here: bind the ReplicaSet's pod to the old node.
	var first corev1.Pod
	f.env.Eventually("the ReplicaSet's pod", func() (bool, error) {
		ps := webPods()
		if len(ps) == 1 {
			first = ps[0]
		}
		return len(ps) == 1, nil
	})
	if err := f.env.Client.SubResource("binding").Create(ctx, &first, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: first.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nOld.Name},
	}); err != nil {
		t.Fatal(err)
	}
	f.env.Eventually("pod "+first.Name+" running on "+nOld.Name, func() (bool, error) {
		err := f.env.Get(&first)
		return first.Status.Phase == corev1.PodRunning, err
	})

	base := old.DeepCopy()
	old.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, string(cloudprovider.DriftImage), "", f.env.Clock.Now())
	if err := f.env.Client.Status().Patch(ctx, old, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	starter := f.controller(disruption.Options{})
	f.env.Clock.Step(time.Second)
	f.pass(starter)
	if err := f.env.Get(old); err != nil || old.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatalf("no command on the drifted node (err %v); events %v", err, f.env.EventsAbout(nOld))
	}
	var cmd struct {
		Destinations map[string]map[string]struct {
			N int `json:"n"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal([]byte(old.Annotations[disruption.CommandAnnotationKey]), &cmd); err != nil {
		t.Fatal(err)
	}
	targets := cmd.Destinations[string(rs.UID)]
	if len(cmd.Destinations) != 1 || len(targets) != 1 {
		t.Fatalf("command destinations %v, want one target for the ReplicaSet %s", cmd.Destinations, rs.UID)
	}
	var target string
	for tg, d := range targets {
		if d.N != 1 {
			t.Errorf("%d pods planned onto %s, want 1", d.N, tg)
		}
		target = tg
	}

	// "Restart": a controller with nothing in memory drives the command on.
	second := f.controller(disruption.Options{})
	var recreated corev1.Pod
	f.env.Eventually("the recreated pod nominated", func() (bool, error) {
		f.pass(second)
		for _, p := range webPods() {
			if p.UID != first.UID && p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" {
				recreated = p
				return true, nil
			}
		}
		return false, nil
	})
	want := target // a node, or a replacement NodeClaim's node
	rep := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: target}}
	if err := f.env.Get(rep); err == nil {
		want = rep.Status.NodeName
	}
	if recreated.Status.NominatedNodeName != want {
		t.Errorf("recreated pod %s nominated to %q, want the planned %q", recreated.Name, recreated.Status.NominatedNodeName, want)
	}
	if err := f.env.Get(old); err != nil || old.DeletionTimestamp.IsZero() {
		t.Errorf("the drifted NodeClaim is not being deleted (err %v)", err)
	}
}
