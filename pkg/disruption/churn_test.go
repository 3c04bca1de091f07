package disruption_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

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
		out := workload.Materialize(&next, &engine.Plan{Existing: c.Placements, NodeClaims: c.Replacements}, metav1.NewTime(t0))
		out.Pods = state.Pods
		state = out
	}
	return state
}

// TestNoChurn alternates provisioning and disruption passes with a
// descheduler-like step (5% of pods evicted and recreated pending each
// round) under zone and hostname ScheduleAnyway spread: over 50 rounds no
// node is created and removed again within 5 rounds, and the node count
// stays within 10% of a fresh provisioning solve of round 1's pods.
func TestNoChurn(t *testing.T) {
	in := workload.Mixed{Name: "churn", Seed: 77, Pods: 300, MaxReplicas: 20, DaemonSets: true}.Input()
	for _, p := range in.Pods {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
			{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
		}
	}
	fresh, err := engine.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	state := workload.Materialize(in, fresh, metav1.NewTime(t0))
	created := map[string]int{}
	for _, en := range state.Nodes {
		created[en.Node.Name] = 0
	}
	rng := rand.New(rand.NewPCG(77, 1))
	churned, commands := 0, 0
	for round := 1; round <= 50; round++ {
		// Descheduler: evict 5% of the pods; their owners recreate them.
		var pending []*corev1.Pod
		for i := range state.Nodes {
			var keep []*corev1.Pod
			for _, p := range state.Nodes[i].Pods {
				if disruption.Reschedulable(p) && rng.Float64() < 0.05 {
					q := p.DeepCopy()
					q.Name = fmt.Sprintf("%s-r%d", p.Name, round)
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
		// Provisioning.
		plan, err := engine.Solve(state)
		if err != nil {
			t.Fatal(err)
		}
		state = workload.Materialize(state, plan, metav1.NewTime(t0))
		// Disruption.
		dp, err := disruption.Compute(input(state, open()))
		if err != nil {
			t.Fatal(err)
		}
		state = applyPlan(state, dp)
		commands += len(dp.Commands)
		now := map[string]bool{}
		for _, en := range state.Nodes {
			now[en.Node.Name] = true
			if _, ok := created[en.Node.Name]; !ok {
				created[en.Node.Name] = round
			}
		}
		for name, r := range created {
			if now[name] {
				continue
			}
			if round-r < 5 {
				churned++
				t.Errorf("round %d: node %s created in round %d removed again", round, name, r)
			}
			delete(created, name)
		}
		if n, want := len(state.Nodes), len(fresh.NodeClaims); float64(n) > 1.10*float64(want) || float64(n) < 0.90*float64(want) {
			t.Errorf("round %d: %d nodes, a fresh solve of the pods needs %d", round, n, want)
		}
	}
	t.Logf("50 rounds: %d nodes at the end (fresh solve %d), %d disruption commands, %d churned", len(state.Nodes), len(fresh.NodeClaims), commands, churned)
}
