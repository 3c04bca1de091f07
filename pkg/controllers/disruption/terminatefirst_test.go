package disruption_test

import (
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
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	nodetermination "github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

// setupAtLimit is setup with provisioning running too, and a NodePool
// capped at limits.nodes: 1 (consolidation off).
func setupAtLimit(t *testing.T) *fixture {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	pm, err := provisioning.NewMetrics(env.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Start(
		provisioning.New(kube, env.Cloud, env.Clock, env.Recorder(), pm, env.Unavailable, provisioning.Options{}),
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable,
			lifecycle.Options{LaunchTimeout: 24 * time.Hour, RegistrationTimeout: 24 * time.Hour}),
		nctermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		nodetermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, nodetermination.Options{}),
	)
	env.StartKubelet(controllerstest.KubeletOptions{})
	np := controllerstest.NodePool(env.Prefix)
	np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	np.Spec.Limits = karpv1.Limits{"nodes": resource.MustParse("1")}
	env.Create(np)
	now := time.Now()
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
	if err := env.Client.Status().Update(env.Context(), np); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, env: env, pool: np, ns: env.Namespace()}
}

// replicaOn runs a one-pod ReplicaSet (the controller manager makes its
// pods) and binds its pod to the node (there is no scheduler), so the
// pod comes back, pending, once the node drains it.
func (f *fixture) replicaOn(name string, node *corev1.Node) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			},
		},
	}
	f.env.Create(rs)
	f.env.Eventually("the ReplicaSet's pod bound to "+node.Name+" and running", func() (bool, error) {
		var pods corev1.PodList
		if err := f.env.Client.List(f.env.Context(), &pods, client.InNamespace(f.ns), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == "" {
				b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
					Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
				_ = f.env.Client.SubResource("binding").Create(f.env.Context(), p, b)
				return false, nil
			}
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning {
				return true, nil
			}
		}
		return false, nil
	})
}

// poolClaims lists the pool's NodeClaims: all of them, and those not
// being deleted.
func (f *fixture) poolClaims() (all []karpv1.NodeClaim, live int) {
	f.t.Helper()
	var list karpv1.NodeClaimList
	if err := f.env.Client.List(f.env.Context(), &list, client.MatchingLabels{karpv1.NodePoolLabelKey: f.pool.Name}); err != nil {
		f.t.Fatal(err)
	}
	for _, nc := range list.Items {
		if nc.DeletionTimestamp.IsZero() {
			live++
		}
	}
	return list.Items, live
}

// A drifted node in a pool at limits.nodes: 1 cannot be replaced first.
// TerminateFirstDrift off, it is kept (DriftReplacementBlocked naming the
// limit) and nothing is launched.
func TestDriftAtLimitKeptWithoutTerminateFirst(t *testing.T) {
	f := setupAtLimit(t)
	old, node := f.node("old", "m5.large")
	f.replicaOn("web", node)
	f.drift(old)

	c := f.controller(disruption.Options{})
	f.env.Clock.Step(time.Second)
	f.pass(c)
	f.pass(c)
	ev := f.env.EventuallyEventAbout(node, disruption.ReasonDisruptionBlocked)
	if !strings.Contains(ev.Note, string(planner.CodeDriftBlocked)) || !strings.Contains(ev.Note, "limits") || !strings.Contains(ev.Note, "TerminateFirstDrift") {
		t.Errorf("DisruptionBlocked note %q, want %s naming the limit and the gate", ev.Note, planner.CodeDriftBlocked)
	}
	if n := len(f.replacements()); n != 0 {
		t.Fatalf("%d replacements at the limit, want none", n)
	}
	if err := f.env.Get(old); err != nil || !old.DeletionTimestamp.IsZero() || old.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("the drifted NodeClaim is disrupted with the gate off (err %v, annotations %v)", err, old.Annotations)
	}
	if all, _ := f.poolClaims(); len(all) != 1 {
		t.Fatalf("%d NodeClaims in the pool, want 1", len(all))
	}
}

// TerminateFirstDrift on: the drifted NodeClaim is deleted first, with no
// replacement of the command's; once it is gone, provisioning launches a
// node for the recreated pod. At no observed moment does the pool have
// more than one NodeClaim.
func TestDriftAtLimitTerminatesFirst(t *testing.T) {
	f := setupAtLimit(t)
	old, node := f.node("old", "m5.large")
	f.replicaOn("web", node)
	f.drift(old)

	c := f.controller(disruption.Options{TerminateFirstDrift: true})
	f.env.Clock.Step(time.Second)
	max := 0
	var next *karpv1.NodeClaim
	f.env.Eventually("the drifted NodeClaim gone and a new NodeClaim launched for its pod", func() (bool, error) {
		f.pass(c)
		f.env.Clock.Step(time.Second)
		all, _ := f.poolClaims()
		max = maxInt(max, len(all))
		if max > 1 {
			t.Fatalf("%d NodeClaims in a pool with limits.nodes 1: %v", len(all), names(all))
		}
		if n := len(f.replacements()); n != 0 {
			t.Fatalf("the terminate-first command created %d replacements", n)
		}
		gone, err := f.env.NotFound(old)
		f.unschedulable()
		if err != nil || !gone {
			return false, err
		}
		for i := range all {
			if all[i].Name != old.Name {
				next = &all[i]
				return true, nil
			}
		}
		return false, nil
	})
	if next.Labels[disruption.CommandLabelKey] != "" {
		t.Errorf("the new NodeClaim %s carries a disruption command; want one of provisioning", next.Name)
	}
	ev := f.env.EventuallyEventAbout(old, disruption.ReasonDisruptionTerminating)
	if !strings.Contains(ev.Note, "first") || !strings.Contains(ev.Note, "TerminateFirstDrift") {
		t.Errorf("DisruptionTerminating note %q does not say it terminates first", ev.Note)
	}
	// Counted as the peer counts it: decision terminate-first, and why.
	if v := metricstest.Value(t, f.env.Metrics.DisruptionTerminateFirstDecisions.WithLabelValues(f.pool.Name, "drifted", "nodepool-at-limit")); v != 1 {
		t.Errorf("terminate_first_decisions_total{nodepool-at-limit} = %v, want 1", v)
	}
	if v := metricstest.Value(t, f.env.Metrics.DisruptionDecisions.WithLabelValues("terminate-first", "drifted", "")); v != 1 {
		t.Errorf("decisions_total{decision=terminate-first} = %v, want 1", v)
	}
	if v := metricstest.Value(t, f.env.Metrics.DisruptionDecisions.WithLabelValues("delete", "drifted", "")); v != 0 {
		t.Errorf("decisions_total{decision=delete,reason=drifted} = %v, want 0", v)
	}
}

// unschedulable plays kube-scheduler (the harness runs none): an unbound
// pending pod is marked PodScheduled=False/Unschedulable, which is what
// provisioning acts on.
func (f *fixture) unschedulable() {
	f.t.Helper()
	var pods corev1.PodList
	if err := f.env.Client.List(f.env.Context(), &pods, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodPending {
			continue
		}
		marked := false
		for _, c := range p.Status.Conditions {
			marked = marked || c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable
		}
		if marked {
			continue
		}
		base := p.DeepCopy()
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/0 nodes are available", LastTransitionTime: metav1.Now()})
		if err := f.env.Client.Status().Patch(f.env.Context(), p, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			f.t.Fatal(err)
		}
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func names(ncs []karpv1.NodeClaim) []string {
	var out []string
	for _, nc := range ncs {
		out = append(out, nc.Name)
	}
	return out
}

// Repair at limits.nodes 1: an unhealthy node past its toleration is kept
// with TerminateFirstRepair off (RepairBlocked naming the limit); with it
// on, its NodeClaim is deleted first, with the repair drain bound, and
// provisioning launches for the recreated pod once it is gone, the pool
// never holding two NodeClaims.
func TestRepairAtLimitTerminatesFirst(t *testing.T) {
	f := setupAtLimit(t)
	sick, node := f.node("sick", "m5.large")
	f.replicaOn("web", node)
	f.injectFault(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastTransitionTime: metav1.NewTime(f.env.Clock.Now()), LastHeartbeatTime: metav1.NewTime(f.env.Clock.Now())})
	f.env.Clock.Step(31 * time.Minute)

	off := f.controller(disruption.Options{NodeRepair: true})
	f.pass(off)
	f.pass(off)
	ev := f.env.EventuallyEventAbout(node, disruption.ReasonDisruptionBlocked)
	if !strings.Contains(ev.Note, string(planner.CodeRepairBlocked)) || !strings.Contains(ev.Note, "limits") || !strings.Contains(ev.Note, "TerminateFirstRepair") {
		t.Errorf("DisruptionBlocked note %q, want %s naming the limit and the gate", ev.Note, planner.CodeRepairBlocked)
	}
	if err := f.env.Get(sick); err != nil || !sick.DeletionTimestamp.IsZero() || sick.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("the unhealthy NodeClaim is disrupted with the gate off (err %v)", err)
	}

	on := f.controller(disruption.Options{NodeRepair: true, TerminateFirstRepair: true})
	var next *karpv1.NodeClaim
	f.env.Eventually("the unhealthy NodeClaim gone and a new NodeClaim launched for its pod", func() (bool, error) {
		f.pass(on)
		f.env.Clock.Step(time.Second)
		f.unschedulable()
		all, _ := f.poolClaims()
		if len(all) > 1 {
			t.Fatalf("%d NodeClaims in a pool with limits.nodes 1: %v", len(all), names(all))
		}
		if n := len(f.replacements()); n != 0 {
			t.Fatalf("the terminate-first command created %d replacements", n)
		}
		if gone, err := f.env.NotFound(sick); err != nil || !gone {
			if err == nil && sick.Annotations[disruption.CommandAnnotationKey] != "" && !strings.Contains(sick.Annotations[disruption.CommandAnnotationKey], "terminationGracePeriod") {
				t.Fatalf("the repair command %s has no drain bound", sick.Annotations[disruption.CommandAnnotationKey])
			}
			return false, err
		}
		for i := range all {
			if all[i].Name != sick.Name {
				next = &all[i]
				return true, nil
			}
		}
		return false, nil
	})
	if next.Labels[disruption.CommandLabelKey] != "" {
		t.Errorf("the new NodeClaim %s carries a disruption command; want one of provisioning", next.Name)
	}
}
