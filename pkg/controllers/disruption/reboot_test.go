package disruption_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
)

// rebootSetup is a pool with one node carrying a pod, and a reboot policy
// for AcceleratedHardwareReady=False (10m toleration), as the AWS policy
// of reboot-clearable GPU faults under RebootForRepair.
func rebootSetup(t *testing.T) (*fixture, *karpv1.NodeClaim, *corev1.Node, *corev1.Pod) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	grace := 5 * time.Minute
	f.env.Cloud.SetRepairPolicies(append(fake.DefaultRepairPolicies(), cloudprovider.RepairPolicy{ConditionType: "AcceleratedHardwareReady",
		ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute, TerminationGracePeriod: &grace, Action: cloudprovider.RepairReboot}))
	nc, node := f.node("gpu", "m5.large")
	p := f.pod("web", node.Name, "500m")
	f.injectFault(node, corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID63Error",
		Message: "injected", LastTransitionTime: metav1.NewTime(f.env.Clock.Now()), LastHeartbeatTime: metav1.NewTime(f.env.Clock.Now())})
	return f, nc, node, p
}

// boot plays the node's return from a reboot: a new boot id, and the fault
// gone when it clears.
func (f *fixture) boot(node *corev1.Node, id string, clears bool) {
	f.t.Helper()
	f.env.Eventually("node "+node.Name+" booted as "+id, func() (bool, error) {
		if err := f.env.Get(node); err != nil {
			return false, err
		}
		base := node.DeepCopy()
		node.Status.NodeInfo.BootID = id
		if clears {
			node.Status.Conditions = slices.DeleteFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == "AcceleratedHardwareReady" })
		}
		return f.env.Client.Status().Patch(f.env.Context(), node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})) == nil, nil
	})
}

func (f *fixture) rebootCondition(nc *karpv1.NodeClaim) *metav1.Condition {
	f.t.Helper()
	if err := f.env.Get(nc); err != nil {
		f.t.Fatal(err)
	}
	return nc.GetCondition(disruption.ConditionTypeRebooting)
}

func fenced(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == disruption.RebootingTaintKey })
}

// expectRebooting checks a reboot was issued (the cloud got it, the
// NodeClaim says so, the node is fenced) and that nothing was replaced or
// evicted.
func (f *fixture) expectRebooting(nc *karpv1.NodeClaim, node *corev1.Node, p *corev1.Pod, reboots int) {
	f.t.Helper()
	if got := f.env.Cloud.Reboots(nc.Status.ProviderID); got != reboots {
		f.t.Fatalf("%d reboots of the instance, want %d; events %v", got, reboots, f.env.EventsAbout(node))
	}
	cond := f.rebootCondition(nc)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != disruption.RebootReasonIssued || !strings.Contains(cond.Message, "AcceleratedHardwareReady") {
		f.t.Errorf("Rebooting condition %+v, want True/%s naming the fault", cond, disruption.RebootReasonIssued)
	}
	if err := f.env.Get(node); err != nil || !fenced(node) {
		f.t.Errorf("node not fenced with %s while rebooting (err %v)", disruption.RebootingTaintKey, err)
	}
	f.expectPodKept(p, node)
	if n := len(f.replacements()); n != 0 {
		f.t.Errorf("%d replacements during a reboot, want 0", n)
	}
}

// expectHeld checks a reboot was requested but not issued yet: the node
// fenced and the Rebooting condition True/RebootRequested for RebootHold,
// the cloud not asked (reboots so far: before).
func (f *fixture) expectHeld(nc *karpv1.NodeClaim, node *corev1.Node, before int) {
	f.t.Helper()
	if got := f.env.Cloud.Reboots(nc.Status.ProviderID); got != before {
		f.t.Fatalf("%d reboots of the instance during the hold, want %d", got, before)
	}
	if cond := f.rebootCondition(nc); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != disruption.RebootReasonRequested {
		f.t.Fatalf("Rebooting condition %+v during the hold, want True/%s", cond, disruption.RebootReasonRequested)
	}
	if err := f.env.Get(node); err != nil || !fenced(node) {
		f.t.Errorf("node not fenced during the hold (err %v)", err)
	}
}

func (f *fixture) expectPodKept(p *corev1.Pod, node *corev1.Node) {
	f.t.Helper()
	cur := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	if err := f.env.Get(cur); err != nil || cur.UID != p.UID || cur.DeletionTimestamp != nil || cur.Spec.NodeName != node.Name {
		f.t.Errorf("pod %s not kept bound to %s through the reboot (err %v, node %q, deleting %v)", p.Name, node.Name, err, cur.Spec.NodeName, cur.DeletionTimestamp != nil)
	}
}

func (f *fixture) expectRebooted(nc *karpv1.NodeClaim, node *corev1.Node, n int) {
	f.t.Helper()
	cond := f.rebootCondition(nc)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != disruption.RebootReasonSucceeded {
		f.t.Fatalf("Rebooting condition %+v, want False/%s", cond, disruption.RebootReasonSucceeded)
	}
	if got := nc.Annotations[disruption.RepairRebootsAnnotationKey]; got != string(rune('0'+n)) {
		f.t.Errorf("%s = %q, want %d", disruption.RepairRebootsAnnotationKey, got, n)
	}
	if err := f.env.Get(node); err != nil || fenced(node) {
		f.t.Errorf("node still fenced after the reboot (err %v)", err)
	}
}

// A reboot-clearable fault past its toleration reboots the node in place:
// the pod stays bound, nothing is launched, the node is fenced until it
// comes back with a new boot id; the cleared fault triggers nothing more.
func TestRebootForRepairClearsFault(t *testing.T) {
	f, nc, node, p := rebootSetup(t)
	c := f.controller(disruption.Options{NodeRepair: true})
	f.env.Clock.Step(5 * time.Minute)
	f.pass(c)
	if got := f.env.Cloud.Reboots(nc.Status.ProviderID); got != 0 {
		t.Fatalf("rebooted within the toleration (%d)", got)
	}
	f.env.Clock.Step(6 * time.Minute)
	f.pass(c)
	f.expectHeld(nc, node, 0)
	f.env.Clock.Step(disruption.RebootHold)
	f.pass(c)
	f.expectRebooting(nc, node, p, 1)
	f.pass(c) // the node has not come back: still rebooting, no second reboot
	f.expectRebooting(nc, node, p, 1)

	f.boot(node, "boot-2", true)
	f.pass(c)
	f.expectRebooted(nc, node, 1)
	f.expectPodKept(p, node)
	f.env.Clock.Step(time.Hour)
	f.pass(c)
	f.pass(c)
	if got := f.env.Cloud.Reboots(nc.Status.ProviderID); got != 1 || len(f.replacements()) != 0 {
		t.Errorf("after the fault cleared: %d reboots, %d replacements; want 1 and 0", got, len(f.replacements()))
	}
	if err := f.env.Get(nc); err != nil || nc.DeletionTimestamp != nil {
		t.Errorf("the rebooted NodeClaim is deleted (err %v)", err)
	}
}

// A fault that persists is rebooted twice (each after its toleration
// again), then the node is replaced.
func TestRebootForRepairPersistentFaultReplaced(t *testing.T) {
	f, nc, node, p := rebootSetup(t)
	c := f.controller(disruption.Options{NodeRepair: true})
	for i := 1; i <= 2; i++ {
		f.env.Clock.Step(11 * time.Minute)
		f.pass(c)
		f.expectHeld(nc, node, i-1)
		f.env.Clock.Step(disruption.RebootHold)
		f.pass(c)
		f.expectRebooting(nc, node, p, i)
		f.boot(node, "boot-"+string(rune('1'+i)), false)
		f.pass(c)
		f.expectRebooted(nc, node, i)
		f.pass(c)
		if got := f.env.Cloud.Reboots(nc.Status.ProviderID); got != i || len(f.replacements()) != 0 {
			t.Fatalf("right after reboot %d: %d reboots, %d replacements (the fault must outlast its toleration again)", i, got, len(f.replacements()))
		}
	}
	f.env.Clock.Step(11 * time.Minute)
	f.pass(c)
	if got := f.env.Cloud.Reboots(nc.Status.ProviderID); got != 2 {
		t.Errorf("%d reboots, want exactly 2 before the replacement", got)
	}
	if n := len(f.replacements()); n != 1 {
		t.Fatalf("%d replacements after two reboots, want 1; events %v", n, f.env.EventsAbout(node))
	}
	if err := f.env.Get(nc); err != nil {
		t.Fatal(err)
	}
	if cond := nc.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != "Unhealthy" {
		t.Errorf("DisruptionReason %+v, want True/Unhealthy (replacing)", cond)
	}
}

// The controller reads Nodes from the operator's trimmed cache, as it runs
// (the tests above read them uncached): a reboot still ends when the
// node comes back with a new boot id (the cache keeps it).
func TestRebootEndsThroughTheTrimmedCache(t *testing.T) {
	f, nc, node, _ := rebootSetup(t)
	c := f.controllerWith(f.env.Manager.GetClient(), disruption.Options{NodeRepair: true})
	f.env.Clock.Step(11 * time.Minute)
	f.env.Eventually("the node rebooted", func() (bool, error) {
		_, err := c.Pass(context.Background())
		f.env.Clock.Step(disruption.RebootHold)
		return f.env.Cloud.Reboots(nc.Status.ProviderID) == 1, err
	})
	f.boot(node, "boot-2", true)
	f.env.Eventually("the reboot ended, seen through the cache", func() (bool, error) {
		if _, err := c.Pass(context.Background()); err != nil {
			return false, err
		}
		cond := f.rebootCondition(nc)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == disruption.RebootReasonSucceeded, nil
	})
}
