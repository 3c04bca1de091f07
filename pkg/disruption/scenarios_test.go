package disruption_test

// The peer's disruption scenarios (its e2e suites, see the brief's
// disruption.md), as table tests on the planner.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

const zone = "us-east-1a"

// types returns catalog types of the region in one zone, filtered.
func types(keep func(*cloudprovider.InstanceType) bool) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range catalog.Builtin().InstanceTypes("us-east-1", []string{zone}, catalog.KubeletSettings{}) {
		if keep(it) {
			out = append(out, it)
		}
	}
	return out
}

func family(fams ...string) func(*cloudprovider.InstanceType) bool {
	return func(it *cloudprovider.InstanceType) bool {
		for _, f := range fams {
			if strings.HasPrefix(it.Name, f+".") {
				return true
			}
		}
		return false
	}
}

// fleet is a hand-built cluster: one pool "default" over its types, nodes
// of the given type and capacity type, pods on them.
type fleet struct {
	in    *engine.Input
	types map[string]*cloudprovider.InstanceType
	n     int
}

func newFleet(its []*cloudprovider.InstanceType, cts ...string) *fleet {
	reqs := requirements.NewRequirements()
	if len(cts) > 0 {
		r, _ := requirements.New("karpenter.sh/capacity-type", requirements.In, cts, nil)
		reqs = requirements.NewRequirements(r)
	}
	f := &fleet{in: &engine.Input{Region: "us-east-1", NodePools: []engine.NodePool{{Name: "default", Requirements: reqs, InstanceTypes: its}}},
		types: map[string]*cloudprovider.InstanceType{}}
	for _, it := range its {
		f.types[it.Name] = it
	}
	return f
}

// node adds a node of type it and capacity type ct with pods of the given
// cpu each (memory 1Gi), returning its name.
func (f *fleet) node(it, ct string, cpus ...string) string {
	t := f.types[it]
	if t == nil {
		panic("no type " + it)
	}
	f.n++
	name := fmt.Sprintf("node-%02d", f.n)
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[corev1.LabelInstanceTypeStable] = it
	labels[corev1.LabelTopologyZone] = zone
	labels["karpenter.sh/capacity-type"] = ct
	labels["karpenter.sh/nodepool"] = "default"
	labels[corev1.LabelHostname] = name
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Capacity: t.Capacity, Allocatable: t.Allocatable()}}
	en := engine.ExistingNode{Node: n, NodePool: "default"}
	for i, c := range cpus {
		p := workload.NewPod("app", fmt.Sprintf("%s-pod-%d", name, i), c, "1Gi")
		p.Labels = map[string]string{"app": "web"}
		p.Spec.NodeName = name
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: t0}}
		en.Pods = append(en.Pods, p)
	}
	f.in.Nodes = append(f.in.Nodes, en)
	return name
}

func (f *fleet) input(pp disruption.PoolPolicy) *disruption.Input { return input(f.in, pp) }

func budget(nodes string) disruption.PoolPolicy {
	pp := open()
	pp.Budgets = []disruption.Budget{{Nodes: nodes}}
	return pp
}

func compute(t *testing.T, in *disruption.Input) *disruption.Plan {
	t.Helper()
	plan, err := disruption.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func disrupted(plan *disruption.Plan) int {
	n := 0
	for _, c := range plan.Commands {
		n += len(c.Nodes)
	}
	return n
}

func keptCode(t *testing.T, plan *disruption.Plan, node string) disruption.Code {
	t.Helper()
	for _, k := range plan.Kept {
		if k.Node == node {
			return k.Code
		}
	}
	t.Fatalf("node %s not kept", node)
	return ""
}

func TestPeerBudgets(t *testing.T) {
	m5 := types(family("m5"))
	cases := []struct {
		name   string
		nodes  int
		budget disruption.PoolPolicy
		pods   bool // nodes carry a small pod each (deletions), else empty
		want   int
	}{
		{"40% of 5 empty nodes: at most 2", 5, budget("40%"), false, 2},
		{"50% of 3 nodes, delete: at most 2", 3, budget("50%"), true, 2},
		{"\"3\" of 5 nodes: at most 3", 5, budget("3"), true, 3},
		{"\"0\": nothing", 5, budget("0"), false, 0},
		{"scheduled \"0\" in its window: nothing", 5, disruption.PoolPolicy{ConsolidateAfter: dur(0),
			Budgets: []disruption.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: "0 13 * * *", Duration: 2 * time.Hour}}}, false, 0},
		{"scheduled \"0\" outside its window: all", 5, disruption.PoolPolicy{ConsolidateAfter: dur(0),
			Budgets: []disruption.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: "0 3 * * *", Duration: 2 * time.Hour}}}, false, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(m5, "on-demand")
			for range tc.nodes {
				if tc.pods {
					f.node("m5.2xlarge", "on-demand", "100m")
				} else {
					f.node("m5.2xlarge", "on-demand")
				}
			}
			plan := compute(t, f.input(tc.budget))
			if got := disrupted(plan); got != tc.want {
				t.Fatalf("disrupted %d nodes, want %d; commands %+v kept %+v", got, tc.want, plan.Commands, plan.Kept)
			}
			for _, k := range plan.Kept {
				if k.Code != disruption.CodeBudget && k.Code != disruption.CodeDestination {
					t.Errorf("node %s kept with %s (%s), want %s", k.Node, k.Code, k.Reason, disruption.CodeBudget)
				}
			}
		})
	}
}

// 100 -> 40 pods: the fleet that remains is more than 60% utilised (cpu).
func TestPeerDelete100To40(t *testing.T) {
	f := newFleet(types(family("m5", "c5")), "on-demand")
	for range 25 {
		f.node("c5.xlarge", "on-demand", "900m", "900m", "900m", "900m")
	}
	// Scale down to 40 pods: keep 2 pods on 20 nodes; 5 nodes keep none.
	for i := range f.in.Nodes {
		if i < 20 {
			f.in.Nodes[i].Pods = f.in.Nodes[i].Pods[:2]
		} else {
			f.in.Nodes[i].Pods = nil
		}
	}
	plan := compute(t, f.input(open()))
	used, alloc := 0.0, 0.0
	gone := map[string]bool{}
	for _, c := range plan.Commands {
		for _, n := range c.Nodes {
			gone[n] = true
		}
		for _, r := range c.Replacements {
			a := f.types[r.Offering.InstanceType].Allocatable()[corev1.ResourceCPU]
			alloc += float64(a.MilliValue())
		}
	}
	for _, en := range f.in.Nodes {
		if gone[en.Node.Name] {
			continue
		}
		a := en.Node.Status.Allocatable[corev1.ResourceCPU]
		alloc += float64(a.MilliValue())
	}
	used = 40 * 900
	if u := used / alloc; u <= 0.6 {
		t.Fatalf("cpu utilisation after %.2f, want > 0.60 (%d commands, fleet $%.3f -> $%.3f)", u, len(plan.Commands), plan.FleetPricePerHour, plan.FleetPricePerHourAfter)
	}
}

func TestPeerReplace(t *testing.T) {
	t.Run("2xlarge -> large", func(t *testing.T) {
		f := newFleet(types(family("m5")), "on-demand")
		f.node("m5.2xlarge", "on-demand", "500m", "500m")
		plan := compute(t, f.input(open()))
		if len(plan.Commands) != 1 || len(plan.Commands[0].Replacements) != 1 {
			t.Fatalf("commands %+v, kept %+v", plan.Commands, plan.Kept)
		}
		r := plan.Commands[0].Replacements[0]
		if r.Offering.InstanceType != "m5.large" {
			t.Fatalf("replacement %s, want m5.large", r.Offering.InstanceType)
		}
		if plan.Commands[0].SavingsPerHour <= 0 {
			t.Fatalf("saves %.4f", plan.Commands[0].SavingsPerHour)
		}
	})
	t.Run("on-demand -> spot", func(t *testing.T) {
		f := newFleet(types(family("m5")), "on-demand", "spot")
		f.node("m5.large", "on-demand", "500m")
		plan := compute(t, f.input(open()))
		if len(plan.Commands) != 1 || plan.Commands[0].Replacements[0].Offering.CapacityType != "spot" {
			t.Fatalf("commands %+v, kept %+v", plan.Commands, plan.Kept)
		}
	})
}

// Spot-to-spot: a single spot node needs 15 cheaper spot types, and only
// with the gate on.
func TestPeerSpotToSpot(t *testing.T) {
	// Types cheaper than m5.4xlarge that hold one 500m pod: take the
	// cheapest n of them, plus the node's own type.
	all := types(func(it *cloudprovider.InstanceType) bool {
		c := it.Capacity[corev1.ResourceCPU]
		return c.Value() >= 2 && c.Value() <= 16 && it.Labels[corev1.LabelArchStable] == "amd64"
	})
	own := "m5.4xlarge"
	var ownPrice float64
	for _, it := range all {
		if it.Name == own {
			ownPrice = spotPrice(it)
		}
	}
	var cheaper []*cloudprovider.InstanceType
	var self *cloudprovider.InstanceType
	for _, it := range all {
		switch p := spotPrice(it); {
		case it.Name == own:
			self = it
		case p > 0 && p < ownPrice:
			cheaper = append(cheaper, it)
		}
	}
	if len(cheaper) < 15 || self == nil {
		t.Fatalf("catalog has %d cheaper spot types", len(cheaper))
	}
	for _, tc := range []struct {
		n    int
		gate bool
		want disruption.Code // "" = replaced
	}{
		{14, true, disruption.CodeSpotToSpotTypes},
		{15, true, ""},
		{15, false, disruption.CodeSpotToSpotDisabled},
	} {
		t.Run(fmt.Sprintf("%d cheaper types, gate %v", tc.n, tc.gate), func(t *testing.T) {
			f := newFleet(append([]*cloudprovider.InstanceType{self}, cheaper[:tc.n]...), "spot")
			node := f.node(own, "spot", "500m")
			in := f.input(open())
			in.Options.SpotToSpotConsolidation = tc.gate
			plan := compute(t, in)
			if tc.want != "" {
				if got := keptCode(t, plan, node); got != tc.want {
					t.Fatalf("kept with %s, want %s", got, tc.want)
				}
				return
			}
			if len(plan.Commands) != 1 {
				t.Fatalf("no command; kept %+v", plan.Kept)
			}
			if got := len(plan.Commands[0].Replacements[0].InstanceTypeOptions); got != disruption.MinSpotToSpotTypes {
				t.Fatalf("replacement has %d options, want the %d cheapest", got, disruption.MinSpotToSpotTypes)
			}
		})
	}
}

func spotPrice(it *cloudprovider.InstanceType) float64 {
	for _, o := range it.Offerings {
		if o.CapacityType == "spot" && o.Zone == zone {
			return o.Price
		}
	}
	return 0
}

// Protected nodes are never in a command, each with its reason code.
func TestPeerProtections(t *testing.T) {
	f := newFleet(types(family("m5")), "on-demand")
	dnd := f.node("m5.2xlarge", "on-demand", "500m")
	f.in.Nodes[0].Pods[0].Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
	dndFor := f.node("m5.2xlarge", "on-demand", "500m")
	f.in.Nodes[1].Pods[0].Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "3h"}
	pdb := f.node("m5.2xlarge", "on-demand", "500m")
	f.in.Nodes[2].Pods[0].Labels = map[string]string{"app": "cart"}
	young := f.node("m5.2xlarge", "on-demand", "500m")
	nominated := f.node("m5.2xlarge", "on-demand", "500m")
	nodeDND := f.node("m5.2xlarge", "on-demand", "500m")
	in := f.input(budget("100%"))
	pp := in.Pools["default"]
	pp.ConsolidateAfter = dur(5 * time.Minute)
	in.Pools["default"] = pp
	st := in.Nodes[young]
	st.LastPodEvent = now.Add(-2 * time.Minute)
	in.Nodes[young] = st
	st = in.Nodes[nominated]
	st.NominatedUntil, st.NominatedPods = now.Add(time.Minute), 3
	in.Nodes[nominated] = st
	st = in.Nodes[nodeDND]
	st.DoNotDisrupt = true
	in.Nodes[nodeDND] = st
	in.PDBs = []disruption.PDB{{Namespace: "app", Name: "cart", Selector: labels.SelectorFromSet(labels.Set{"app": "cart"})}}
	plan := compute(t, in)
	want := map[string]disruption.Code{
		dnd: disruption.CodePodDoNotDisrupt, dndFor: disruption.CodePodDoNotDisrupt, pdb: disruption.CodePDB,
		young: disruption.CodeConsolidateAfter, nominated: disruption.CodeNominated, nodeDND: disruption.CodeNodeDoNotDisrupt,
	}
	for node, code := range want {
		if got := keptCode(t, plan, node); got != code {
			t.Errorf("%s kept with %s, want %s", node, got, code)
		}
	}
	for _, c := range plan.Commands {
		for _, n := range c.Nodes {
			if _, ok := want[n]; ok {
				t.Errorf("protected node %s in command %q", n, c.Message)
			}
		}
	}
	for _, k := range plan.Kept {
		t.Logf("%s %s: %s", k.Node, k.Code, k.Reason)
	}
	// A do-not-disrupt duration that has passed no longer protects.
	f.in.Nodes[1].Pods[0].Annotations[disruption.DoNotDisruptAnnotation] = "1h"
	plan = compute(t, in)
	for _, k := range plan.Kept {
		if k.Node == dndFor && k.Code == disruption.CodePodDoNotDisrupt {
			t.Errorf("expired do-not-disrupt still protects: %s", k.Reason)
		}
	}
}

// Many nodes to several cheaper ones: the peer only ever replaces many
// nodes with one (core #1442).
func TestManyToMany(t *testing.T) {
	// Pods of 3.5 cpu (with daemonsets none) fit two to an m5.2xlarge
	// (7.9 allocatable) but not three to anything below 16 cpu: six
	// xlarge-sized nodes each with one pod (3.5 cpu on m5.xlarge does not
	// fit: they are on m5.2xlarge) re-pack onto three 2xlarge.
	f := newFleet(types(family("m5")), "on-demand")
	for range 6 {
		f.node("m5.2xlarge", "on-demand", "3500m")
	}
	// Capacity per pool: cap node size at 2xlarge so one node cannot take all.
	var capped []*cloudprovider.InstanceType
	for _, it := range f.in.NodePools[0].InstanceTypes {
		if c := it.Capacity[corev1.ResourceCPU]; c.Value() <= 8 {
			capped = append(capped, it)
		}
	}
	f.in.NodePools[0].InstanceTypes = capped
	plan := compute(t, f.input(open()))
	removed, repl := 0, 0
	for _, c := range plan.Commands {
		removed += len(c.Nodes)
		repl += len(c.Replacements)
		if len(c.Nodes) > 1 && len(c.Replacements) > 1 {
			t.Logf("many -> many: %s", c.Message)
		}
	}
	if removed-repl < 3 {
		t.Fatalf("fleet shrank by %d nodes (removed %d, launched %d), want 3; commands %+v kept %+v", removed-repl, removed, repl, plan.Commands, plan.Kept)
	}
	if plan.FleetPricePerHourAfter >= plan.FleetPricePerHour {
		t.Fatalf("fleet $%.3f -> $%.3f", plan.FleetPricePerHour, plan.FleetPricePerHourAfter)
	}
}

// Balanced: a replacement that saves little of the pool's cost while
// disrupting most of its pods is not worth it; WhenEmptyOrUnderutilized
// takes it.
func TestBalanced(t *testing.T) {
	build := func(policy string) (*disruption.Input, string) {
		f := newFleet(types(family("m5", "c5")), "on-demand")
		busy := f.node("m5.xlarge", "on-demand", "350m", "350m", "350m", "350m", "350m", "350m", "350m", "350m", "350m", "350m")
		for i := range f.in.Nodes[0].Pods {
			f.in.Nodes[0].Pods[i].Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resourceMust("500Mi")
		}
		for i := range 5 {
			f.node("m5.2xlarge", "on-demand", "7")
			f.in.Nodes[1+i].Pods[0].Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
		}
		pp := open()
		pp.ConsolidationPolicy = policy
		return f.input(pp), busy
	}
	in, busy := build(disruption.PolicyBalanced)
	plan := compute(t, in)
	if got := keptCode(t, plan, busy); got != disruption.CodeBalanced {
		t.Fatalf("Balanced: %s kept with %s, want %s; commands %+v", busy, got, disruption.CodeBalanced, plan.Commands)
	}
	in, busy = build(disruption.PolicyWhenEmptyOrUnderutilized)
	plan = compute(t, in)
	if len(plan.Commands) != 1 || plan.Commands[0].Nodes[0] != busy {
		t.Fatalf("WhenEmptyOrUnderutilized: commands %+v kept %+v", plan.Commands, plan.Kept)
	}
}

// Pods on a node being deleted need a place too: a node that would be
// removed otherwise is kept when they would be placed on it.
func TestPodsOnDeletingNodes(t *testing.T) {
	f := newFleet(types(family("m5")), "on-demand")
	deleting := f.node("m5.2xlarge", "on-demand", "3", "3")
	spare := f.node("m5.2xlarge", "on-demand")
	in := f.input(open())
	st := in.Nodes[deleting]
	st.MarkedForDeletion = true
	in.Nodes[deleting] = st
	f.in.Nodes[0].MarkedForDeletion = true
	plan := compute(t, in)
	if got := keptCode(t, plan, spare); got != disruption.CodeNeededByPending {
		t.Fatalf("spare node kept with %s, want %s; commands %+v", got, disruption.CodeNeededByPending, plan.Commands)
	}
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

// ExplainNode: a node held by a do-not-disrupt pod is kept with its code,
// and the what-if says what removing it would save; a node whose pod fits
// nowhere else says which pod.
func TestExplainNode(t *testing.T) {
	f := newFleet(types(family("m5")), "on-demand")
	held := f.node("m5.2xlarge", "on-demand", "500m")
	f.in.Nodes[0].Pods[0].Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
	huge := f.node("m5.24xlarge", "on-demand", "90")
	f.in.NodePools[0].InstanceTypes = types(func(it *cloudprovider.InstanceType) bool {
		return strings.HasPrefix(it.Name, "m5.") && it.Name != "m5.24xlarge" && it.Name != "m5.metal"
	})
	f.types["m5.24xlarge"] = nil
	in := f.input(open())
	ex, _, err := disruption.ExplainNode(in, held)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Kept == nil || ex.Kept.Code != disruption.CodePodDoNotDisrupt || !ex.Removable || ex.SavingsPerHour <= 0 {
		t.Fatalf("explanation %+v (kept %+v)", ex, ex.Kept)
	}
	ex, _, err = disruption.ExplainNode(in, huge)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Removable || !strings.Contains(ex.Blocker, "app/"+huge+"-pod-0") {
		t.Fatalf("explanation %+v", ex)
	}
	if _, _, err := disruption.ExplainNode(in, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown node: %v", err)
	}
}

// A replacement of several nodes keeps only options that hold at least
// half of its savings whatever is launched: for every replacement, every
// compatible offering of every option kept costs less than its planned
// price plus its share of half the savings. (A spot launch may pick any
// of them; without this a few percent saved could be lost at launch and
// found again by the next pass, in a loop.)
func TestMultiReplacementSavingsHoldWhateverIsLaunched(t *testing.T) {
	for _, ct := range []string{"spot", "on-demand"} {
		t.Run(ct, func(t *testing.T) {
			f := newFleet(types(family("m5", "m6i", "c5", "c6i", "r5")), ct)
			for range 6 {
				f.node("m5.2xlarge", ct, "3500m")
			}
			var capped []*cloudprovider.InstanceType
			for _, it := range f.in.NodePools[0].InstanceTypes {
				if c := it.Capacity[corev1.ResourceCPU]; c.Value() <= 8 {
					capped = append(capped, it)
				}
			}
			f.in.NodePools[0].InstanceTypes = capped
			in := f.input(open())
			in.Options.SpotToSpotConsolidation = true
			plan := compute(t, in)
			checked := 0
			for _, c := range plan.Commands {
				if len(c.Nodes) < 2 || len(c.Replacements) == 0 {
					continue
				}
				checked++
				share := (c.PricePerHour - c.ReplacementPricePerHour) / float64(2*len(c.Replacements))
				for _, r := range c.Replacements {
					zones := r.Requirements.Get(corev1.LabelTopologyZone)
					cts := r.Requirements.Get("karpenter.sh/capacity-type")
					for _, name := range r.InstanceTypeOptions {
						for _, o := range f.types[name].Offerings {
							if !o.Available || zones != nil && !zones.Has(o.Zone) || cts != nil && !cts.Has(o.CapacityType) {
								continue
							}
							if o.Price >= r.Offering.Price+share+1e-12 {
								t.Errorf("%s: replacement %s planned at $%.4f/h keeps %s at $%.4f/h (%s %s), above $%.4f/h (half the savings' share)",
									c.Message, r.Name, r.Offering.Price, name, o.Price, o.Zone, o.CapacityType, r.Offering.Price+share)
							}
						}
					}
				}
			}
			if checked == 0 {
				t.Fatalf("no multi-node replacement to check; commands %+v kept %+v", plan.Commands, plan.Kept)
			}
		})
	}
}

// A PDB blocks a node only when it has no disruption left (the peer's
// rule): a node holding more of its pods than it allows is still
// replaced, the eviction API pacing the drain, and a second node of the
// same PDB waits for the next pass.
func TestPDBBlocksOnlyWhenExhausted(t *testing.T) {
	for _, allowed := range []int32{0, 2} {
		f := newFleet(types(family("m5")), "on-demand")
		a := f.node("m5.2xlarge", "on-demand", "500m", "500m", "500m")
		b := f.node("m5.2xlarge", "on-demand", "500m", "500m", "500m")
		in := f.input(budget("100%"))
		for _, name := range []string{a, b} {
			st := in.Nodes[name]
			st.Drifted = "AMIDrift"
			in.Nodes[name] = st
		}
		in.PDBs = []disruption.PDB{{Namespace: "app", Name: "web", DisruptionsAllowed: allowed,
			Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}}
		plan := compute(t, in)
		inCmd := map[string]bool{}
		for _, c := range plan.Commands {
			for _, n := range c.Nodes {
				inCmd[n] = true
			}
		}
		for _, k := range plan.Kept {
			t.Logf("allowed %d: %s %s: %s", allowed, k.Node, k.Code, k.Reason)
		}
		if allowed == 0 {
			if len(plan.Commands) != 0 || keptCode(t, plan, a) != disruption.CodePDB || keptCode(t, plan, b) != disruption.CodePDB {
				t.Fatalf("PDB allowing 0: commands %+v, want both nodes kept PDBBlocked", plan.Commands)
			}
			continue
		}
		if len(inCmd) != 1 || !inCmd[a] {
			t.Fatalf("PDB allowing 2 with 3 pods a node: nodes in commands %v, want only the older %s", inCmd, a)
		}
		// The second node is kept: it takes the first's pods, or the first
		// took the PDB's allowance.
		if got := keptCode(t, plan, b); got != disruption.CodePDB && got != disruption.CodeDestination {
			t.Fatalf("second node kept with %s, want %s or %s", got, disruption.CodePDB, disruption.CodeDestination)
		}
	}
}

// With consolidateAfter Never in every pool and nothing drifted no node can
// be a candidate: the pass compiles no model (at fleet size the compile
// and base solve were most of a pass), and every node is still kept with
// its reason. A drifted node makes it compile again.
func TestNothingToConsiderCompilesNothing(t *testing.T) {
	f := newFleet(types(family("m5", "c5")), "on-demand")
	busy := f.node("c5.xlarge", "on-demand", "900m")
	empty := f.node("c5.2xlarge", "on-demand")
	never := open()
	never.ConsolidateAfter = nil
	plan := compute(t, f.input(never))
	if len(plan.Commands) != 0 || plan.Stats.Compiles != 0 {
		t.Fatalf("%d commands, %d compiles; want 0 and 0", len(plan.Commands), plan.Stats.Compiles)
	}
	for _, n := range []string{busy, empty} {
		if c := keptCode(t, plan, n); c != disruption.CodeConsolidationDisabled {
			t.Errorf("node %s kept with %s, want %s", n, c, disruption.CodeConsolidationDisabled)
		}
	}
	if plan.FleetPricePerHour <= 0 {
		t.Errorf("fleet price %v, want the two nodes' price", plan.FleetPricePerHour)
	}

	in := f.input(never)
	st := in.Nodes[busy]
	st.Drifted = "NodePoolDrifted"
	in.Nodes[busy] = st
	plan = compute(t, in)
	if plan.Stats.Compiles != 1 || disrupted(plan) != 1 {
		t.Fatalf("with %s drifted: %d compiles, %d nodes disrupted; want 1 and 1", busy, plan.Stats.Compiles, disrupted(plan))
	}
}
