package disruption_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
)

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == disruption.GateName })
}

// replicaSet makes a one-replica ReplicaSet whose pods keep a finalizer
// (an evicted one stays terminating, so the command over its node stays
// in the cluster), and returns it with a lister of its pods.
func (f *fixture) replicaSet(name string, replicas int32) (*appsv1.ReplicaSet, func() []corev1.Pod) {
	f.t.Helper()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Finalizers: []string{testHold}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			},
		},
	}
	f.env.Create(rs)
	return rs, func() []corev1.Pod {
		var pods corev1.PodList
		if err := f.env.Client.List(f.env.Context(), &pods, client.InNamespace(f.ns), client.MatchingLabels{"app": name}); err != nil {
			f.t.Fatal(err)
		}
		return pods.Items
	}
}

const testHold = "dovetail.sh/test-hold"

// releaseFinalizers lets the test's pods go at cleanup.
func (f *fixture) releaseFinalizers() {
	f.t.Cleanup(func() {
		var pods corev1.PodList
		if err := f.env.Client.List(context.Background(), &pods, client.InNamespace(f.ns)); err != nil {
			return
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			base := p.DeepCopy()
			p.Finalizers = nil
			_ = f.env.Client.Patch(context.Background(), p, client.MergeFrom(base))
		}
	})
}

// bindFirst waits for the only pod of a ReplicaSet and binds it to node
// (no scheduler here).
func (f *fixture) bindFirst(pods func() []corev1.Pod, node string) corev1.Pod {
	f.t.Helper()
	var first corev1.Pod
	f.env.Eventually("the ReplicaSet's pod", func() (bool, error) {
		ps := pods()
		if len(ps) == 1 {
			first = ps[0]
		}
		return len(ps) == 1, nil
	})
	if err := f.env.Client.SubResource("binding").Create(f.env.Context(), &first, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: first.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}); err != nil {
		f.t.Fatal(err)
	}
	f.env.Eventually("pod "+first.Name+" running on "+node, func() (bool, error) {
		err := f.env.Get(&first)
		return first.Status.Phase == corev1.PodRunning, err
	})
	return first
}

func (f *fixture) drift(nc *karpv1.NodeClaim) {
	f.t.Helper()
	base := nc.DeepCopy()
	nc.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, string(cloudprovider.DriftImage), "", f.env.Clock.Now())
	if err := f.env.Client.Status().Patch(f.env.Context(), nc, client.MergeFrom(base)); err != nil {
		f.t.Fatal(err)
	}
}

// The placement gate on the real API server: while a command recreates a
// ReplicaSet's pods, the MutatingAdmissionPolicy the controller installed
// gates the new pod of that ReplicaSet (and not a new pod of another
// owner) until a pass runs; the next pass, of a controller that never saw
// the command start, nominates it to the planned node and lifts the gate;
// the owners leave the policy's ConfigMap once the command is over.
func TestRecreatedPodIsGatedThenNominatedThenUngated(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	f.releaseFinalizers()
	old, nOld := f.node("old", "m5.large")
	_, nKeep := f.node("keep", "m5.large")
	ctx := f.env.Context()
	rs, webPods := f.replicaSet("web", 1)
	other, otherPods := f.replicaSet("other", 0)
	first := f.bindFirst(webPods, nOld.Name)

	f.drift(old)
	opts := disruption.Options{PlacementGate: true}
	starter := f.controller(opts)
	f.env.Clock.Step(time.Second)
	f.pass(starter)
	if err := f.env.Get(old); err != nil || old.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatalf("no command on the drifted node (err %v)", err)
	}
	policy := &admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName}}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName}}
	if err := f.env.Get(policy); err != nil {
		t.Fatalf("the placement policy is not installed: %v", err)
	}
	if err := f.env.Get(binding); err != nil || binding.Spec.PolicyName != disruption.PlacementName {
		t.Fatalf("the placement binding is not installed: %v %+v", err, binding.Spec)
	}
	if got := policy.Annotations[disruption.CommandsAnnotationKey]; got == "" || !strings.Contains(policy.Spec.MatchConditions[1].Expression, string(rs.UID)) ||
		strings.Contains(policy.Spec.MatchConditions[1].Expression, string(other.UID)) {
		t.Fatalf("the policy gates commands %q with %q; want the command's and the ReplicaSet %s only", got, policy.Spec.MatchConditions[1].Expression, rs.UID)
	}
	// The API server takes a changed policy in within about a second (the
	// controller waits gateSettle before it evicts): wait until a pod of
	// the ReplicaSet would be gated.
	f.env.Eventually("the policy gating the ReplicaSet's pods", func() (bool, error) {
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "probe", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		}
		err := f.env.Client.Create(ctx, probe, client.DryRunAll)
		return err == nil && gated(probe), err
	})

	// The replacements (if the plan has any) come up; then the pod is
	// evicted as the drain would (deleted: its finalizer keeps it
	// terminating) with no pass running, so the recreated pod waits.
	f.env.Eventually("the replacements initialized", func() (bool, error) {
		for _, r := range f.replacements() {
			if !r.IsTrue(karpv1.ConditionTypeInitialized) {
				return false, nil
			}
		}
		return true, nil
	})
	if err := f.env.Client.Delete(ctx, &first); err != nil {
		t.Fatal(err)
	}
	var recreated corev1.Pod
	f.env.Eventually("the recreated pod", func() (bool, error) {
		for _, p := range webPods() {
			if p.UID != first.UID {
				recreated = p
				return true, nil
			}
		}
		return false, nil
	})
	if !gated(&recreated) || recreated.Status.NominatedNodeName != "" {
		t.Fatalf("recreated pod %s: gates %v, nominated %q; want gated, not nominated", recreated.Name, recreated.Spec.SchedulingGates, recreated.Status.NominatedNodeName)
	}
	// Another owner's new pod is not gated.
	base := other.DeepCopy()
	other.Spec.Replicas = ptr.To[int32](1)
	if err := f.env.Client.Patch(ctx, other, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	f.env.Eventually("the other ReplicaSet's pod", func() (bool, error) { return len(otherPods()) == 1, nil })
	if p := otherPods()[0]; len(p.Spec.SchedulingGates) != 0 {
		t.Errorf("pod %s of another owner got gates %v", p.Name, p.Spec.SchedulingGates)
	}

	// A controller with nothing in memory (a restart) takes the command
	// from its annotation.
	second := f.controller(opts)
	f.pass(second)
	if err := f.env.Get(&recreated); err != nil {
		t.Fatal(err)
	}
	// The plan: the pod goes to the node kept (no replacement for one
	// 500m pod when a node with room is there) or to the replacement.
	want := map[string]bool{nKeep.Name: true}
	for _, r := range f.replacements() {
		want[r.Status.NodeName] = true
	}
	if gated(&recreated) || !want[recreated.Status.NominatedNodeName] {
		t.Fatalf("after a pass, recreated pod %s: gates %v, nominated %q; want ungated and nominated to one of %v",
			recreated.Name, recreated.Spec.SchedulingGates, recreated.Status.NominatedNodeName, want)
	}

	// Once the command is over (its evicted pod gone, the old node deleted)
	// and the grace after it has passed, the owner leaves the ConfigMap.
	p := first.DeepCopy()
	if err := f.env.Get(p); err == nil {
		b := p.DeepCopy()
		p.Finalizers = nil
		if err := f.env.Client.Patch(ctx, p, client.MergeFrom(b)); err != nil {
			t.Fatal(err)
		}
	}
	f.env.Eventually("the drifted NodeClaim gone", func() (bool, error) {
		f.env.Clock.Step(time.Second) // past the gate's settling time
		f.pass(second)
		return f.env.NotFound(old)
	})
	f.env.Clock.Step(time.Minute)
	f.env.Eventually("the owners cleared", func() (bool, error) {
		f.pass(second)
		err := f.env.Get(policy)
		return policy.Annotations[disruption.CommandsAnnotationKey] == "" && policy.Spec.MatchConditions[1].Expression == "false", err
	})
}

// A gate nobody will lift must not stay: a controller that starts with no
// command in the cluster (a restart after the command ended, or a pod
// gated just before the owners were cleared) lifts the gate at its first
// pass, and only its own gate.
func TestStaleGatesAreLiftedAtTheFirstPass(t *testing.T) {
	f := setup(t, false, nil)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "stale"},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: disruption.GateName}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	f.env.Create(p)
	alone := p.DeepCopy()
	alone.Name = "alone"
	alone.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: disruption.GateName}}
	alone.ResourceVersion = ""
	f.env.Create(alone)

	c := f.controller(disruption.Options{PlacementGate: true})
	f.pass(c)
	for _, pod := range []*corev1.Pod{p, alone} {
		if err := f.env.Get(pod); err != nil {
			t.Fatal(err)
		}
		if gated(pod) {
			t.Errorf("pod %s still has the placement gate after a pass: %v", pod.Name, pod.Spec.SchedulingGates)
		}
	}
	if len(p.Spec.SchedulingGates) != 1 || p.Spec.SchedulingGates[0].Name != "example.com/other" {
		t.Errorf("pod %s: gates %v, want the other gate kept", p.Name, p.Spec.SchedulingGates)
	}
}

// noPolicyAPI is an API server without admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy (before v1.36, or with it turned off): applying
// the policy fails as the client does for a kind the server does not serve.
type noPolicyAPI struct{ client.Client }

func (c noPolicyAPI) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	switch obj.(type) {
	case *admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding:
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}, SearchedVersions: []string{"v1"}}
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// Without the policy API the controller falls back to nominations alone:
// the command runs, the recreated pod is not gated (the policy of an
// earlier test is not left gating it either: this controller could not
// write it, and it gates no owner of this test), and it is still
// nominated to its planned node.
func TestWithoutThePolicyAPIRecreatedPodsAreStillNominated(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	f.releaseFinalizers()
	old, nOld := f.node("old", "m5.large")
	_, nKeep := f.node("keep", "m5.large")
	_, webPods := f.replicaSet("web", 1)
	first := f.bindFirst(webPods, nOld.Name)
	f.drift(old)

	c := f.controllerWith(noPolicyAPI{f.env.Client}, disruption.Options{PlacementGate: true})
	f.env.Clock.Step(time.Second)
	var recreated corev1.Pod
	f.env.Eventually("the recreated pod nominated", func() (bool, error) {
		f.pass(c)
		for _, p := range webPods() {
			if p.UID != first.UID && p.Status.NominatedNodeName != "" {
				recreated = p
				return true, nil
			}
		}
		return false, nil
	})
	want := map[string]bool{nKeep.Name: true}
	for _, r := range f.replacements() {
		want[r.Status.NodeName] = true
	}
	if !want[recreated.Status.NominatedNodeName] || gated(&recreated) {
		t.Errorf("recreated pod %s nominated to %q (want one of %v), gates %v (want none)", recreated.Name,
			recreated.Status.NominatedNodeName, want, recreated.Spec.SchedulingGates)
	}

}

// The controller's RBAC (config/rbac, the chart's too) is enough for the
// gate and no more: as its ServiceAccount, a pass installs the policy and
// its binding and lifts a gate, while a policy or binding of another name
// is refused.
func TestPlacementGateRBAC(t *testing.T) {
	f := setup(t, false, nil)
	ctx := f.env.Context()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "config", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, "apply", "-f", dir).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f config/rbac: %v\n%s", err, out)
	}
	cfg, err := cp.RESTConfigFor("system:serviceaccount:kube-system:dovetail", "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	sa, err := client.New(cfg, client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName}},
		&admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName}},
	} {
		if err := f.env.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "stale"},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: disruption.GateName}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	f.env.Create(p)
	c := f.controllerWith(sa, disruption.Options{PlacementGate: true})
	f.pass(c)
	policy := &admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName}}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName}}
	for _, obj := range []client.Object{policy, binding} {
		if err := f.env.Get(obj); err != nil {
			t.Fatalf("%T as the ServiceAccount applied it: %v", obj, err)
		}
	}
	if err := f.env.Get(p); err != nil || gated(p) {
		t.Fatalf("the stale gate as the ServiceAccount: %v %v", err, p.Spec.SchedulingGates)
	}
	other := placementCopy(policy, disruption.PlacementName+"-other")
	//nolint:staticcheck // typed apply, as the controller does
	if err := sa.Patch(ctx, other, client.Apply, client.FieldOwner("t"), client.ForceOwnership); !apierrors.IsForbidden(err) {
		t.Errorf("applying another policy as the ServiceAccount: %v, want Forbidden", err)
	}
	ob := &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: disruption.PlacementName + "-other"},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: disruption.PlacementName},
	}
	//nolint:staticcheck // typed apply, as the controller does
	if err := sa.Patch(ctx, ob, client.Apply, client.FieldOwner("t"), client.ForceOwnership); !apierrors.IsForbidden(err) {
		t.Errorf("applying another binding as the ServiceAccount: %v, want Forbidden", err)
	}
}

// placementCopy is policy under another name, ready to apply.
func placementCopy(policy *admissionv1.MutatingAdmissionPolicy, name string) *admissionv1.MutatingAdmissionPolicy {
	cp := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       *policy.Spec.DeepCopy(),
	}
	return cp
}
