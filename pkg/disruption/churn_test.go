package disruption_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// applyPlan executes a disruption plan on a cluster the way the controller
// does: each command's nodes go, their pods land where it placed them and
// its replacements become nodes.
func applyPlan(state *engine.Input, plan *disruption.Plan) *engine.Input {
	for _, c := range plan.Commands {
		gone := map[string]bool{}
		for _, n := range c.Nodes {
			gone[n] = true
		}
		next := *state
		next.Nodes = nil
		next.Pods = nil
		for _, en := range state.Nodes {
			if !gone[en.Node.Name] {
				next.Nodes = append(next.Nodes, en)
				continue
			}
			for _, p := range en.Pods {
				if disruption.Reschedulable(p) {
					q := *p
					q.Spec.NodeName = ""
					next.Pods = append(next.Pods, &q)
				}
			}
		}
		// A placement on an earlier command's replacement is in flight
		// for the planner; that replacement is a node by now.
		existing := map[string]bool{}
		for _, en := range next.Nodes {
			existing[en.Node.Name] = true
		}
		placements := slices.Clone(c.Placements)
		for i := range placements {
			if placements[i].InFlight && existing[placements[i].Node] {
				placements[i].InFlight = false
			}
		}
		out := workload.Materialize(&next, &engine.Plan{Existing: placements, NodeClaims: c.Replacements}, metav1.NewTime(t0))
		out.Pods = state.Pods
		state = out
	}
	return state
}

// TestNoChurn alternates provisioning and disruption passes with a
// descheduler-like step (5% of pods evicted and recreated pending each
// round) under zone and hostname ScheduleAnyway spread. It starts with a
// scale-down that leaves consolidation work (40% of the pods deleted),
// consolidated by passes without the descheduler until they settle (which
// must come within 10% of a fresh solve); then come the 50 rounds. Over the
// whole test no node is created and removed again within 5 passes, and in
// every round the node count stays within 10% of a fresh provisioning solve
// of round 1's pods. A pass is a minute and the pools' consolidateAfter is
// 2 minutes, with each node's last pod event tracked. Each pass binds what
// fits on the nodes there are first, as the kube-scheduler does, and
// provisions only for the rest.
func TestNoChurn(t *testing.T) {
	in := workload.Mixed{Name: "churn", Seed: 77, Pods: 300, MaxReplicas: 20, DaemonSets: true}.Input()
	for _, p := range in.Pods {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
			{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
		}
	}
	first, err := engine.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	state := workload.Materialize(in, first, metav1.NewTime(t0))
	// The scale-down: 40% of the pods go.
	cut := rand.New(rand.NewPCG(77, 2))
	var remaining []*corev1.Pod
	for i := range state.Nodes {
		var keep []*corev1.Pod
		for _, p := range state.Nodes[i].Pods {
			if disruption.Reschedulable(p) && cut.Float64() < 0.4 {
				continue
			}
			keep = append(keep, p)
			if disruption.Reschedulable(p) {
				q := *p
				q.Spec.NodeName = ""
				remaining = append(remaining, &q)
			}
		}
		state.Nodes[i].Pods = keep
	}
	// What a fresh provisioning solve of round 1's pods needs.
	ref := *in
	ref.Pods = remaining
	fresh, err := engine.Solve(&ref)
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]int{}
	// Time: a round is a minute. Nodes carry when they were created and
	// their last pod event (a bind or a removal), as the pod-events
	// controller records them; the pools' consolidateAfter is 2 minutes.
	createdAt, lastEvent := map[string]time.Time{}, map[string]time.Time{}
	for _, en := range state.Nodes {
		created[en.Node.Name] = -100 // from before the scale-down: removing them is the point
		createdAt[en.Node.Name] = t0.Add(-time.Hour)
		lastEvent[en.Node.Name] = t0.Add(-time.Hour)
	}
	touch := func(before, after map[string]map[string]bool, at time.Time) {
		touchPodEvents(before, after, createdAt, lastEvent, at)
	}
	pp := open()
	pp.ConsolidateAfter = dur(2 * time.Minute)
	rng := rand.New(rand.NewPCG(77, 1))
	churned := 0
	// pass runs one minute: the descheduler's evictions (when on), a
	// provisioning pass and a disruption pass, and checks that no node
	// created in the last 5 minutes is removed. It returns the commands.
	minute := 0
	pass := func(deschedule bool) int {
		minute++
		at := t0.Add(time.Duration(minute) * time.Minute)
		before := podSets(state)
		// Descheduler: evict 5% of the pods; their owners recreate them.
		var pending []*corev1.Pod
		for i := range state.Nodes {
			if !deschedule {
				break
			}
			var keep []*corev1.Pod
			for _, p := range state.Nodes[i].Pods {
				if disruption.Reschedulable(p) && rng.Float64() < 0.05 {
					q := p.DeepCopy()
					q.Name = fmt.Sprintf("%s-r%d", p.Name, minute)
					q.Spec.NodeName = ""
					q.Status = corev1.PodStatus{Phase: corev1.PodPending}
					pending = append(pending, q)
					continue
				}
				keep = append(keep, p)
			}
			state.Nodes[i].Pods = keep
		}
		state.Pods = pending
		// The kube-scheduler binds what fits on the nodes there are:
		// ScheduleAnyway spread only scores nodes, it filters none. Only
		// the pods it cannot bind are marked unschedulable, and only those
		// reach provisioning (snapshot.WaitsForCapacity).
		sched := *state
		sched.Options.PreferencePolicy = engine.PreferenceIgnore
		bound, err := engine.Solve(&sched)
		if err != nil {
			t.Fatal(err)
		}
		state = workload.Materialize(state, &engine.Plan{Existing: bound.Existing}, metav1.NewTime(at))
		// Provisioning.
		plan, err := engine.Solve(state)
		if err != nil {
			t.Fatal(err)
		}
		state = workload.Materialize(state, plan, metav1.NewTime(at))
		touch(before, podSets(state), at)
		// Disruption.
		din := input(state, pp)
		din.Now = at
		for name, st := range din.Nodes {
			st.Created, st.LastPodEvent = createdAt[name], lastEvent[name]
			din.Nodes[name] = st
		}
		dp, err := disruption.Compute(din)
		if err != nil {
			t.Fatal(err)
		}
		mid := podSets(state)
		state = applyPlan(state, dp)
		touch(mid, podSets(state), at)
		now := map[string]bool{}
		for _, en := range state.Nodes {
			now[en.Node.Name] = true
			if _, ok := created[en.Node.Name]; !ok {
				created[en.Node.Name] = minute
			}
		}
		for name, m := range created {
			if now[name] {
				continue
			}
			if minute-m < 5 {
				churned++
				t.Errorf("minute %d: node %s created in minute %d removed again", minute, name, m)
			}
			delete(created, name)
		}
		return len(dp.Commands)
	}
	// The scale-down's consolidation: passes without the descheduler until
	// three in a row have nothing to do (the nodes that receive pods in a
	// pass wait out consolidateAfter before they are candidates again, so
	// it takes a few passes).
	scaledown, idle := 0, 0
	for idle < 3 {
		if minute == 30 {
			t.Fatalf("the scale-down's consolidation did not settle in 30 passes: %d nodes", len(state.Nodes))
		}
		n := pass(false)
		scaledown += n
		if idle++; n > 0 {
			idle = 0
		}
	}
	if scaledown == 0 {
		t.Fatal("the scale-down left nothing to consolidate: the test shows nothing")
	}
	settled := len(state.Nodes)
	want := len(fresh.NodeClaims)
	if float64(settled) > 1.10*float64(want) {
		t.Errorf("after the scale-down's consolidation (%d passes): %d nodes, more than 10%% above the %d a fresh solve of the pods needs", minute, settled, want)
	}
	// The 50 rounds with the descheduler: the node count stays within 10%
	// of a fresh provisioning solve of round 1's pods (the same pods: the
	// descheduler only moves them) in every round.
	commands := 0
	var counts []int
	for round := 1; round <= 50; round++ {
		commands += pass(true)
		n := len(state.Nodes)
		counts = append(counts, n)
		if float64(n) > 1.10*float64(want) {
			t.Errorf("round %d: %d nodes, more than 10%% above the %d a fresh solve of the pods needs", round, n, want)
		}
	}
	// Steady: the node count never grows back more than 10% above the
	// lowest it had reached (consolidation may keep shrinking it; churn
	// would make it climb).
	for i := 1; i < len(counts); i++ {
		if lo := slices.Min(counts[:i]); float64(counts[i]) > 1.10*float64(lo) {
			t.Errorf("round %d: %d nodes, up from %d (%v)", i+1, counts[i], lo, counts)
			break
		}
	}
	t.Logf("node counts by round: %v", counts)
	t.Logf("%d nodes after the scale-down, %d after its consolidation (%d passes, %d commands), %d at the end of 50 rounds (fresh solve %d), %d commands in the rounds, %d churned",
		len(first.NodeClaims), settled, minute-50, scaledown, len(state.Nodes), want, commands, churned)
}

// touchPodEvents records, as the pod-events controller does, a node's
// creation (a node not in createdAt) and its last pod event (its pods
// changed between before and after) at at.
func touchPodEvents(before, after map[string]map[string]bool, createdAt, lastEvent map[string]time.Time, at time.Time) {
	for node, pods := range after {
		if _, ok := createdAt[node]; !ok {
			createdAt[node], lastEvent[node] = at, at
		}
		if len(pods) != len(before[node]) {
			lastEvent[node] = at
			continue
		}
		for p := range pods {
			if !before[node][p] {
				lastEvent[node] = at
				break
			}
		}
	}
}

// podSets lists each node's pods by name.
func podSets(in *engine.Input) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(in.Nodes))
	for _, en := range in.Nodes {
		m := make(map[string]bool, len(en.Pods))
		for _, p := range en.Pods {
			m[p.Namespace+"/"+p.Name] = true
		}
		out[en.Node.Name] = m
	}
	return out
}
