package disruption_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// repairFleet is a pool of n m5.xlarge nodes, each 3 vCPU full, with the
// fake provider's repair policies (Ready False/Unknown for 30m, drained for
// at most 10m), consolidation off (consolidateAfter Never) and the given
// budgets, node repair on.
func repairFleet(n int, budgets ...disruption.Budget) (*disruption.Input, []string) {
	f := newFleet(types(family("m5")), "on-demand")
	var names []string
	for range n {
		names = append(names, f.node("m5.xlarge", "on-demand", "1500m", "1500m"))
	}
	in := f.input(disruption.PoolPolicy{Budgets: budgets})
	in.RepairPolicies = fake.DefaultRepairPolicies()
	in.Options.NodeRepair = true
	for _, name := range names {
		st := in.Nodes[name]
		st.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
		in.Nodes[name] = st
	}
	return in, names
}

// sicken sets the node's Ready condition to status since the given time
// (NotReady, as the controller reports it).
func sicken(in *disruption.Input, node string, status corev1.ConditionStatus, since time.Time) {
	st := in.Nodes[node]
	st.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletNotReady", LastTransitionTime: metav1.NewTime(since)}}
	st.NotReady = status != corev1.ConditionTrue
	in.Nodes[node] = st
}

func repaired(plan *disruption.Plan) []string {
	var out []string
	for _, c := range plan.Commands {
		if c.Reason == disruption.ReasonUnhealthy {
			out = append(out, c.Nodes...)
		}
	}
	slices.Sort(out)
	return out
}

// remove drops a node from the cluster (its repair done: the pods went to
// its replacement, which the next pass does not need to hold them).
func remove(in *disruption.Input, node string) {
	cl := *in.Cluster
	cl.Nodes = slices.DeleteFunc(slices.Clone(cl.Nodes), func(en engine.ExistingNode) bool { return en.Node.Name == node })
	in.Cluster = &cl
	delete(in.Nodes, node)
}

// A pool of 10 with 2 unhealthy nodes under a 10% budget: both are
// repaired, one at a time.
func TestRepairTwoOfTenOneAtATime(t *testing.T) {
	in, names := repairFleet(10, disruption.Budget{Nodes: "10%"})
	sicken(in, names[3], corev1.ConditionFalse, now.Add(-45*time.Minute))
	sicken(in, names[7], corev1.ConditionUnknown, now.Add(-40*time.Minute))

	plan := compute(t, in)
	if got := repaired(plan); !slices.Equal(got, []string{names[3]}) {
		t.Fatalf("first pass repaired %v, want only %s (the longest unhealthy; 10%% of 10 is 1)", got, names[3])
	}
	cmd := plan.Commands[0]
	if len(cmd.Replacements) != 1 || len(cmd.Pods) != 2 {
		t.Errorf("the repair replaces the node (1 replacement for its 2 pods), got %d replacements, %d pods", len(cmd.Replacements), len(cmd.Pods))
	}
	if cmd.TerminationGracePeriod == nil || *cmd.TerminationGracePeriod != 10*time.Minute {
		t.Errorf("drain bound %v, want the policy's 10m", cmd.TerminationGracePeriod)
	}
	if c := keptCode(t, plan, names[7]); c != disruption.CodeBudget {
		t.Errorf("second unhealthy node kept %s, want %s", c, disruption.CodeBudget)
	}
	if plan.Allowed["default"][disruption.ReasonUnhealthy] != 1 {
		t.Errorf("Unhealthy budget allows %d, want 1 (NotReady nodes do not count against repair's budget)", plan.Allowed["default"][disruption.ReasonUnhealthy])
	}

	// While the first one is being deleted, the budget is spent.
	st := in.Nodes[names[3]]
	st.MarkedForDeletion = true
	in.Nodes[names[3]] = st
	plan = compute(t, in)
	if got := repaired(plan); len(got) != 0 {
		t.Fatalf("with one repair in progress, repaired %v, want none", got)
	}
	if c := keptCode(t, plan, names[7]); c != disruption.CodeBudget {
		t.Errorf("second unhealthy node kept %s during the first repair, want %s", c, disruption.CodeBudget)
	}

	// Once it is gone, the second one is repaired.
	remove(in, names[3])
	plan = compute(t, in)
	if got := repaired(plan); !slices.Equal(got, []string{names[7]}) {
		t.Fatalf("after the first repair, repaired %v, want %s", got, names[7])
	}
}

// 3 of 10 unhealthy trips the 20% breaker: nothing is repaired until one
// recovers.
func TestRepairBreaker(t *testing.T) {
	in, names := repairFleet(10, disruption.Budget{Nodes: "100%"})
	for _, i := range []int{1, 4, 8} {
		sicken(in, names[i], corev1.ConditionFalse, now.Add(-time.Hour))
	}
	plan := compute(t, in)
	if got := repaired(plan); len(got) != 0 {
		t.Fatalf("3 of 10 unhealthy: repaired %v, want none", got)
	}
	for _, i := range []int{1, 4, 8} {
		if c := keptCode(t, plan, names[i]); c != disruption.CodeRepairBreaker {
			t.Errorf("node %s kept %s, want %s", names[i], c, disruption.CodeRepairBreaker)
		}
	}
	sicken(in, names[4], corev1.ConditionTrue, now)
	plan = compute(t, in)
	if got := repaired(plan); !slices.Equal(got, []string{names[1], names[8]}) {
		t.Fatalf("after one recovered: repaired %v, want %s and %s", got, names[1], names[8])
	}
}

func TestRepairToleration(t *testing.T) {
	in, names := repairFleet(10)
	sicken(in, names[0], corev1.ConditionFalse, now.Add(-20*time.Minute))
	plan := compute(t, in)
	if got := repaired(plan); len(got) != 0 {
		t.Fatalf("within the 30m toleration: repaired %v", got)
	}
	if c := keptCode(t, plan, names[0]); c != disruption.CodeRepairTolerating {
		t.Errorf("kept %s, want %s", c, disruption.CodeRepairTolerating)
	}
	sicken(in, names[0], corev1.ConditionFalse, now.Add(-31*time.Minute))
	if got := repaired(compute(t, in)); !slices.Equal(got, names[:1]) {
		t.Errorf("past the toleration: repaired %v, want %s", got, names[0])
	}
	// Off, the node is reported, not repaired.
	in.Options.NodeRepair = false
	plan = compute(t, in)
	if got := repaired(plan); len(got) != 0 {
		t.Fatalf("NodeRepair off: repaired %v", got)
	}
	if c := keptCode(t, plan, names[0]); c != disruption.CodeRepairDisabled {
		t.Errorf("NodeRepair off: kept %s, want %s", c, disruption.CodeRepairDisabled)
	}
}

// do-not-disrupt does not hold repair; a blocking pod does only when no
// grace period bounds the drain.
func TestRepairIgnoresDoNotDisrupt(t *testing.T) {
	in, names := repairFleet(10, disruption.Budget{Nodes: "100%"})
	sicken(in, names[0], corev1.ConditionFalse, now.Add(-time.Hour))
	sicken(in, names[1], corev1.ConditionFalse, now.Add(-time.Hour))
	st := in.Nodes[names[0]]
	st.DoNotDisrupt = true
	in.Nodes[names[0]] = st
	for i := range in.Cluster.Nodes {
		if in.Cluster.Nodes[i].Node.Name == names[1] {
			p := in.Cluster.Nodes[i].Pods[0].DeepCopy()
			p.Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
			in.Cluster.Nodes[i].Pods = append([]*corev1.Pod{p}, in.Cluster.Nodes[i].Pods[1:]...)
		}
	}
	plan := compute(t, in)
	if got := repaired(plan); !slices.Equal(got, names[:2]) {
		t.Fatalf("repaired %v, want %v (do-not-disrupt does not hold repair)", got, names[:2])
	}
	// Without a drain bound, the do-not-disrupt pod holds it.
	in.RepairPolicies = []cloudprovider.RepairPolicy{{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute}}
	plan = compute(t, in)
	if got := repaired(plan); !slices.Equal(got, names[:1]) {
		t.Fatalf("no drain bound: repaired %v, want only %s", got, names[0])
	}
	if k := keptCode(t, plan, names[1]); k != disruption.CodeRepairBlocked {
		t.Errorf("kept %s, want %s", k, disruption.CodeRepairBlocked)
	}
	for _, k := range plan.Kept {
		if k.Node == names[1] && !strings.Contains(k.Reason, "terminationGracePeriod") {
			t.Errorf("message %q does not say what would unblock it", k.Reason)
		}
	}
}

func TestRepairPolicyFor(t *testing.T) {
	grace := time.Minute
	ps := []cloudprovider.RepairPolicy{
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, ReasonRegex: `.*XID(79|74).*`, TolerationDuration: 10 * time.Minute, TerminationGracePeriod: &grace},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	}
	for _, tc := range []struct {
		reason string
		status corev1.ConditionStatus
		want   time.Duration
		ok     bool
	}{
		{"NvidiaXID79Error", corev1.ConditionFalse, 10 * time.Minute, true},
		{"NvidiaXID13Error", corev1.ConditionFalse, 30 * time.Minute, true},
		{"NvidiaXID79Error", corev1.ConditionTrue, 0, false},
	} {
		p, ok := cloudprovider.RepairPolicyFor(ps, corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: tc.status, Reason: tc.reason})
		if ok != tc.ok || ok && p.TolerationDuration != tc.want {
			t.Errorf("%s=%s: got %v %v, want %v %v", tc.reason, tc.status, p.TolerationDuration, ok, tc.want, tc.ok)
		}
	}
}

// rebootFleet is repairFleet with one reboot policy on
// AcceleratedHardwareReady=False (10m toleration), as the AWS policies
// under RebootForRepair.
func rebootFleet(n int, budgets ...disruption.Budget) (*disruption.Input, []string) {
	in, names := repairFleet(n, budgets...)
	grace := 5 * time.Minute
	in.RepairPolicies = append(in.RepairPolicies, cloudprovider.RepairPolicy{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse,
		TolerationDuration: 10 * time.Minute, TerminationGracePeriod: &grace, Action: cloudprovider.RepairReboot})
	return in, names
}

func gpuFault(in *disruption.Input, node string, since time.Time) {
	st := in.Nodes[node]
	st.Conditions = append(st.Conditions, corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse,
		Reason: "NvidiaXID63Error", LastTransitionTime: metav1.NewTime(since)})
	in.Nodes[node] = st
}

// A fault of a reboot policy reboots the node in place (no replacement, no
// eviction), one at a time under the budget; while it reboots the node is
// kept and spends the budget; a fault that outlasts its toleration after
// each of two reboots is then repaired by replacement.
func TestRepairRebootTwiceThenReplace(t *testing.T) {
	in, names := rebootFleet(10, disruption.Budget{Nodes: "10%"})
	gpuFault(in, names[2], now.Add(-11*time.Minute))
	gpuFault(in, names[5], now.Add(-12*time.Minute))

	plan := compute(t, in)
	if got := repaired(plan); !slices.Equal(got, []string{names[5]}) {
		t.Fatalf("repaired %v, want only %s (eligible first; the budget allows 1)", got, names[5])
	}
	cmd := plan.Commands[0]
	if !cmd.Reboot || len(cmd.Replacements) != 0 || len(cmd.Pods) != 0 {
		t.Fatalf("command %+v: want a reboot with no replacement and no eviction", cmd)
	}
	if c := keptCode(t, plan, names[2]); c != disruption.CodeBudget {
		t.Errorf("second faulty node kept %s, want %s", c, disruption.CodeBudget)
	}

	// Rebooting: kept, and the budget stays spent.
	st := in.Nodes[names[5]]
	st.Rebooting = true
	in.Nodes[names[5]] = st
	plan = compute(t, in)
	if got := repaired(plan); len(got) != 0 {
		t.Fatalf("during the reboot, repaired %v", got)
	}
	if c := keptCode(t, plan, names[5]); c != disruption.CodeRebooting {
		t.Errorf("rebooting node kept %s, want %s", c, disruption.CodeRebooting)
	}

	// The reboot ended and the fault persists: not again within the
	// toleration after the reboot (the other node goes first), then the
	// second reboot, then the replacement.
	for reboots := 1; reboots <= 2; reboots++ {
		st.Rebooting, st.RepairReboots, st.LastReboot = false, reboots, now.Add(-5*time.Minute)
		in.Nodes[names[5]] = st
		plan = compute(t, in)
		if got := repaired(plan); slices.Contains(got, names[5]) {
			t.Fatalf("after reboot %d, repaired again within the toleration: %v", reboots, got)
		}
		if c := keptCode(t, plan, names[5]); c != disruption.CodeRepairTolerating {
			t.Errorf("after reboot %d, kept %s, want %s", reboots, c, disruption.CodeRepairTolerating)
		}
		st.LastReboot = now.Add(-11 * time.Minute)
		in.Nodes[names[5]] = st
		in.Nodes[names[2]] = healthyGPU(in.Nodes[names[2]])
		plan = compute(t, in)
		if got := repaired(plan); !slices.Equal(got, []string{names[5]}) {
			t.Fatalf("after reboot %d and the toleration, repaired %v, want %s", reboots, got, names[5])
		}
		want := reboots < 2
		if plan.Commands[0].Reboot != want {
			t.Fatalf("after %d reboots: reboot=%v, want %v (replaced after %d)", reboots, plan.Commands[0].Reboot, want, cloudprovider.MaxRepairReboots)
		}
	}
	if cmd := plan.Commands[0]; len(cmd.Replacements) != 1 || cmd.TerminationGracePeriod == nil || *cmd.TerminationGracePeriod != 5*time.Minute {
		t.Errorf("the replacement after two reboots: %d replacements, drain bound %v; want 1 and the policy's 5m", len(cmd.Replacements), cmd.TerminationGracePeriod)
	}
}

func healthyGPU(st disruption.NodeState) disruption.NodeState {
	st.Conditions = slices.DeleteFunc(slices.Clone(st.Conditions), func(c corev1.NodeCondition) bool { return c.Type == "AcceleratedHardwareReady" })
	return st
}

// karpenter.sh/do-not-repair vetoes repair (do-not-disrupt does not).
func TestRepairDoNotRepair(t *testing.T) {
	in, names := repairFleet(10, disruption.Budget{Nodes: "100%"})
	sicken(in, names[0], corev1.ConditionFalse, now.Add(-time.Hour))
	sicken(in, names[1], corev1.ConditionFalse, now.Add(-time.Hour))
	st := in.Nodes[names[0]]
	st.DoNotRepair = true
	in.Nodes[names[0]] = st
	plan := compute(t, in)
	if got := repaired(plan); !slices.Equal(got, names[1:2]) {
		t.Fatalf("repaired %v, want only %s", got, names[1])
	}
	if c := keptCode(t, plan, names[0]); c != disruption.CodeDoNotRepair {
		t.Errorf("kept %s, want %s", c, disruption.CodeDoNotRepair)
	}
}
