package disruption_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/enginetest"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// randomCluster builds seeded cluster i: a random mixed workload of 50-500
// pods, planned, materialized, with 20-80% of its pods deleted.
func randomCluster(tb testing.TB, seed uint64) *engine.Input { return randomClusterP(tb, seed, true) }

// randomClusterP is randomCluster, with or without preferred
// anti-affinity (which the LP bound does not model).
func randomClusterP(tb testing.TB, seed uint64, prefer bool) *engine.Input {
	rng := rand.New(rand.NewPCG(seed, 0x6469737275707421))
	m := workload.Mixed{
		Name: fmt.Sprintf("p%d", seed), Seed: seed, Pods: 50 + rng.IntN(451), MaxReplicas: 4 + rng.IntN(20),
		ZoneSpread: rng.Float64() * 0.5, HostAnti: rng.Float64() * 0.2, AMD64: rng.Float64() * 0.4,
		PreferSpread: rng.Float64() * 0.2, DaemonSets: true, NoSpotPool: rng.IntN(4) == 0,
	}
	if !prefer {
		m.PreferSpread = 0
	}
	if rng.IntN(3) == 0 {
		m.Teams, m.TeamShare = 1+rng.IntN(2), 0.3
	}
	return cluster(tb, m.Input(), 0.2+0.6*rng.Float64(), seed)
}

// blockers adds do-not-disrupt pods, PDBs and count budgets to in.
func blockers(in *disruption.Input, seed uint64) map[string]int {
	rng := rand.New(rand.NewPCG(seed, 5))
	budgets := map[string]int{}
	for name, pp := range in.Pools {
		n := 1 + rng.IntN(6)
		pp.Budgets = []disruption.Budget{{Nodes: fmt.Sprint(n)}}
		in.Pools[name] = pp
		budgets[name] = n
	}
	apps := map[string]bool{}
	for i := range in.Cluster.Nodes {
		for j, p := range in.Cluster.Nodes[i].Pods {
			if !disruption.Reschedulable(p) {
				continue
			}
			apps[p.Namespace+"/"+p.Labels["app"]] = true
			if rng.IntN(25) == 0 {
				q := *p
				q.Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
				in.Cluster.Nodes[i].Pods[j] = &q
			}
		}
	}
	keys := make([]string, 0, len(apps))
	for k := range apps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if rng.IntN(3) != 0 {
			continue
		}
		ns, app, _ := strings.Cut(k, "/")
		in.PDBs = append(in.PDBs, disruption.PDB{Namespace: ns, Name: app, DisruptionsAllowed: int32(rng.IntN(3)),
			Selector: labels.SelectorFromSet(labels.Set{"app": app})})
	}
	return budgets
}

// check verifies a disruption plan independently of the planner: each
// command applied in order leaves a valid cluster (capacity and every
// constraint, by the engine's independent checker), within budgets and PDB
// allowances, evicting no do-not-disrupt pod, never more expensive; and
// every managed node not in a command has a reason.
func check(t *testing.T, in *disruption.Input, plan *disruption.Plan, budgets map[string]int) {
	t.Helper()
	inCmd := map[string]bool{}
	pdbUsed := make([]int32, len(in.PDBs))
	poolUsed := map[string]int{}
	replaced := map[string]bool{}
	state := in.Cluster
	for ci, c := range plan.Commands {
		nodes := map[string]engine.ExistingNode{}
		for _, en := range state.Nodes {
			nodes[en.Node.Name] = en
		}
		var displaced []*corev1.Pod
		cmdPDB := map[int]int32{}
		for _, name := range c.Nodes {
			if inCmd[name] {
				t.Fatalf("command %d: node %s is in two commands", ci, name)
			}
			inCmd[name] = true
			en, ok := nodes[name]
			if !ok {
				t.Fatalf("command %d: node %s does not exist", ci, name)
			}
			st := in.Nodes[name]
			poolUsed[st.NodePool]++
			if b, ok := budgets[st.NodePool]; ok && poolUsed[st.NodePool] > b {
				t.Fatalf("command %d: pool %s disrupts %d nodes, budget %d", ci, st.NodePool, poolUsed[st.NodePool], b)
			}
			if st.DoNotDisrupt {
				t.Fatalf("command %d: node %s has do-not-disrupt", ci, name)
			}
			for _, p := range en.Pods {
				if !disruption.Reschedulable(p) {
					continue
				}
				if _, ok := p.Annotations[disruption.DoNotDisruptAnnotation]; ok {
					t.Fatalf("command %d evicts do-not-disrupt pod %s/%s", ci, p.Namespace, p.Name)
				}
				for k, pdb := range in.PDBs {
					if pdb.Namespace == p.Namespace && pdb.Selector.Matches(labels.Set(p.Labels)) {
						cmdPDB[k]++
					}
				}
				q := *p
				q.Spec.NodeName = ""
				displaced = append(displaced, &q)
			}
		}
		// A command may only touch a PDB that has disruptions left; a
		// single node may hold more of its pods than it allows (the
		// eviction API paces those), a batch of nodes may not.
		for k, n := range cmdPDB {
			pdb := in.PDBs[k]
			if pdbUsed[k] >= pdb.DisruptionsAllowed {
				t.Fatalf("command %d evicts %d pods of PDB %s, which has %d of %d disruptions left", ci, n, pdb.Name, max(pdb.DisruptionsAllowed-pdbUsed[k], 0), pdb.DisruptionsAllowed)
			}
			if len(c.Nodes) > 1 && pdbUsed[k]+n > pdb.DisruptionsAllowed {
				t.Fatalf("command %d: %d nodes evict %d pods of PDB %s, which allows %d more", ci, len(c.Nodes), n, pdb.Name, pdb.DisruptionsAllowed-pdbUsed[k])
			}
			pdbUsed[k] += n
		}
		if c.Reason == disruption.ReasonUnderutilized && !(c.ReplacementPricePerHour < c.PricePerHour) {
			t.Fatalf("command %d: replacements $%.4f not cheaper than $%.4f", ci, c.ReplacementPricePerHour, c.PricePerHour)
		}
		if c.Reason != disruption.ReasonDrifted && c.SavingsPerHour <= 0 {
			t.Fatalf("command %d saves %.4f", ci, c.SavingsPerHour)
		}
		// The move itself, checked as a plan for the displaced pods on the
		// cluster without the command's nodes.
		gone := map[string]bool{}
		for _, n := range c.Nodes {
			gone[n] = true
		}
		next := *state
		next.Nodes = nil
		for _, en := range state.Nodes {
			if !gone[en.Node.Name] {
				next.Nodes = append(next.Nodes, en)
			}
		}
		next.Pods = displaced
		// The test binds earlier commands' replacements as nodes (bound
		// below); the planner still sees them in flight.
		placements := slices.Clone(c.Placements)
		for i, pl := range placements {
			if pl.InFlight && replaced[pl.Node] {
				placements[i].InFlight = false
			}
		}
		move := &engine.Plan{Existing: placements, NodeClaims: c.Replacements, PricePerHour: c.ReplacementPricePerHour}
		if errs := enginetest.CheckPlan(&next, move); len(errs) > 0 {
			for _, pl := range c.Placements {
				t.Logf("placement %v", pl)
			}
			for _, r := range c.Replacements {
				t.Logf("replacement %s pods %v", r.Name, r.Pods)
			}
			t.Logf("pods %v", c.Pods)
			t.Fatalf("command %d (%s %s, %d nodes) is invalid:\n%s", ci, c.Reason, c.ConsolidationType, len(c.Nodes), enginetest.DescribeErrs(errs))
		}
		state = bound(&next, move)
		for _, r := range c.Replacements {
			replaced[r.Name] = true
		}
	}
	kept := map[string]bool{}
	for _, k := range plan.Kept {
		if k.Code == "" || k.Reason == "" {
			t.Fatalf("node %s kept without a reason", k.Node)
		}
		if inCmd[k.Node] {
			t.Fatalf("node %s both kept and in a command", k.Node)
		}
		kept[k.Node] = true
	}
	for _, en := range in.Cluster.Nodes {
		if !inCmd[en.Node.Name] && !kept[en.Node.Name] {
			t.Fatalf("node %s neither in a command nor kept", en.Node.Name)
		}
	}
}

// bound applies a checked move: its pods bound to their nodes, the
// replacements materialized as nodes.
func bound(in *engine.Input, plan *engine.Plan) *engine.Input {
	return workload.Materialize(in, plan, metav1.NewTime(t0))
}

func TestPlannerProperty(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	var commands, kept int
	for seed := range uint64(seeds) {
		cl := randomCluster(t, seed)
		in := input(cl, open())
		budgets := blockers(in, seed)
		plan, err := disruption.Compute(in)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		check(t, in, plan, budgets)
		commands += len(plan.Commands)
		kept += len(plan.Kept)
	}
	t.Logf("%d clusters: %d commands, %d nodes kept", seeds, commands, kept)
	if commands == 0 {
		t.Fatal("no command in any cluster")
	}
}

// TestPlannerCost: without blockers (no do-not-disrupt, no PDBs, budgets
// of 100%, spot-to-spot on), the fleet after the commands of up to five
// passes (the controller plans every 10 s) is within 1.10x the lower
// bound for the pods that remain (the larger of the engine's bound for
// them as a provisioning problem, spreads included, and the planner's own
// fleet bound) and within 1.10x a fresh provisioning solve of them, on
// every cluster. Logged: the distributions of both, and of the fleet
// against the planner's own bound alone, which drops topology spreads (a
// fleet left skewed by deletions may keep its skew) and so is lower.
func TestPlannerCost(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	costFamily(t, 1000, seeds)
}

// TestPlannerCostHeldOut is the same over a held-out family of seeds that
// no tuning run looks at (its figures are reported separately; its bound
// assertion was added after a run of it passed, not by tuning on it).
func TestPlannerCostHeldOut(t *testing.T) {
	seeds := 50
	if testing.Short() {
		seeds = 10
	}
	costFamily(t, 70000, seeds)
}

// costFamily plans the seeded clusters from first on: every fleet after
// the commands must be within 1.10x the lower bound for the remaining
// pods (issue 8) and within 1.10x a fresh solve of them.
func costFamily(t *testing.T, first uint64, seeds int) {
	var own, gaps, fresh []float64
	within := 0
	var above []string
	for seed := first; seed < first+uint64(seeds); seed++ {
		cl := randomClusterP(t, seed, false)
		var plan *disruption.Plan
		for pass := range 5 {
			in := input(cl, open())
			in.Options.SpotToSpotConsolidation = true
			var err error
			plan, err = disruption.Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			if pass == 0 {
				check(t, in, plan, nil)
			}
			if len(plan.Commands) == 0 {
				break
			}
			cl = applyPlan(cl, plan)
		}
		if plan.LowerBoundPricePerHour <= 0 {
			t.Fatalf("seed %d: no lower bound", seed)
		}
		// The remaining pods as a provisioning problem: a fresh solve of
		// every one of them, and its lower bound.
		b := *cl
		b.Nodes = nil
		b.Pods = append([]*corev1.Pod(nil), cl.Pods...)
		for _, en := range cl.Nodes {
			for _, p := range en.Pods {
				if disruption.Reschedulable(p) {
					q := *p
					q.Spec.NodeName = ""
					b.Pods = append(b.Pods, &q)
				}
			}
		}
		fp, err := engine.Solve(&b)
		if err != nil {
			t.Fatal(err)
		}
		if fp.LowerBound <= 0 {
			t.Fatalf("seed %d: no lower bound for the remaining pods", seed)
		}
		bound := math.Max(fp.LowerBound, plan.LowerBoundPricePerHour)
		after := plan.FleetPricePerHourAfter
		own = append(own, after/plan.LowerBoundPricePerHour)
		gaps = append(gaps, after/bound)
		fresh = append(fresh, after/fp.PricePerHour)
		if after <= 1.10*bound {
			within++
		} else {
			above = append(above, fmt.Sprintf("%d (%.3fx; fresh solve %.3fx)", seed, after/bound, fp.PricePerHour/bound))
			t.Errorf("seed %d: fleet after $%.4f/h is %.3fx the lower bound for the remaining pods ($%.4f/h; a fresh solve of them is %.3fx it)",
				seed, after, after/bound, bound, fp.PricePerHour/bound)
		}
		if after > 1.10*fp.PricePerHour {
			t.Errorf("seed %d: fleet after $%.4f/h is %.3fx the lower bound for the remaining pods ($%.4f/h) and %.3fx a fresh solve of them ($%.4f/h); the planner's own fleet bound is $%.4f/h",
				seed, after, after/bound, bound, after/fp.PricePerHour, fp.PricePerHour, plan.LowerBoundPricePerHour)
		}
	}
	sort.Float64s(own)
	sort.Float64s(gaps)
	sort.Float64s(fresh)
	t.Logf("over %d clusters, fleet after the commands / the lower bound for the remaining pods: %s (%d within 1.10); / a fresh solve of them: %s; / the planner's own fleet bound (spreads dropped): %s",
		len(gaps), quantiles(gaps), within, quantiles(fresh), quantiles(own))
	if len(above) > 0 {
		t.Logf("above 1.10x the lower bound for the remaining pods: %s", strings.Join(above, ", "))
	}
}

func quantiles(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	q := func(f float64) float64 { return v[int(math.Min(float64(len(v)-1), f*float64(len(v))))] }
	return fmt.Sprintf("min %.3f median %.3f p90 %.3f max %.3f", v[0], q(0.5), q(0.9), v[len(v)-1])
}
