package disruption_test

import (
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

// DrainOrder ranks nodes as the planner drains them: with a budget of one
// node, the node Compute consolidates is the first DrainOrder ranks; a
// node a pod holds (do-not-disrupt) is ranked last, an empty one not at
// all.
func TestDrainOrder(t *testing.T) {
	f := newFleet(types(family("m5", "c5")), "on-demand")
	small := f.node("m5.large", "on-demand", "100m")
	big := f.node("c5.4xlarge", "on-demand", "100m", "100m")
	mid := f.node("m5.2xlarge", "on-demand", "100m")
	held := f.node("m5.4xlarge", "on-demand", "100m")
	for i := range f.in.Nodes {
		if f.in.Nodes[i].Node.Name == held {
			f.in.Nodes[i].Pods[0].Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
		}
	}
	// The planner, one node at a time, drains the first ranked node.
	plan := compute(t, f.input(budget("1")))
	empty := f.node("m5.large", "on-demand")
	in := f.input(budget("1"))
	order, err := disruption.DrainOrder(in)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range order {
		names = append(names, r.Node)
		if r.Node == empty {
			t.Errorf("the empty node %s is ranked", empty)
		}
	}
	if len(order) != 4 {
		t.Fatalf("ranked %v, want the 4 nodes with pods", names)
	}
	last := order[len(order)-1]
	if last.Node != held || last.Tier != disruption.TierHeld || last.Code != disruption.CodePodDoNotDisrupt {
		t.Errorf("last %+v, want %s held by %s", last, held, disruption.CodePodDoNotDisrupt)
	}
	if order[0].Node != big || len(order[0].Pods) != 2 {
		t.Errorf("first %+v, want %s (the dearest per pod) with its 2 pods; order %v", order[0], big, names)
	}
	pos := map[string]int{}
	for i, n := range names {
		pos[n] = i
	}
	if pos[mid] > pos[small] {
		t.Errorf("order %v: %s ($/h per disruption above %s) after it", names, mid, small)
	}
	var first string
	for _, c := range plan.Commands {
		if c.Reason == disruption.ReasonUnderutilized {
			first = c.Nodes[0]
			break
		}
	}
	if first != order[0].Node {
		t.Errorf("the planner consolidates %q first, DrainOrder ranks %s first (%v)", first, order[0].Node, names)
	}
}
