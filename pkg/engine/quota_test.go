package engine_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// TestZoneQuotaLeavesOutFilteredNodes: a zone spread (maxSkew 1) whose pods
// select a node label counts only nodes with that label
// (nodeAffinityPolicy Honor). A matching pod on an existing node without
// the label must not count towards the zone quotas: it once raised the
// total from 4 to 5 and the plan put 3 pods in one zone and 1 in the other
// (found by TestPlanProperties).
func TestZoneQuotaLeavesOutFilteredNodes(t *testing.T) {
	for _, existing := range []bool{false, true} {
		in := &engine.Input{}
		in.NodePools = append(in.NodePools, pool("pool0", 20, req(corev1.LabelTopologyZone, requirements.In, "zone-a", "zone-b")))
		if existing {
			node := existingNode("node0", "zone-a", "2", "16Gi", map[string]string{corev1.LabelArchStable: "amd64"})
			in.Nodes = append(in.Nodes, engine.ExistingNode{Node: node, Pods: []*corev1.Pod{newPod("node0-pod0", "500m", "1Gi", withLabels("app", "a"))}})
		}
		for r := range 4 {
			in.Pods = append(in.Pods, newPod(fmt.Sprintf("d0-%d", r), "100m", "128Mi", withLabels("app", "a"),
				withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, sel("app", "a")), withNodeSelector(labelFamily, "c")))
		}
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		perZone := map[string]int{}
		for _, c := range plan.NodeClaims {
			perZone[c.Offering.Zone] += len(c.Pods)
		}
		if perZone["zone-a"] != 2 || perZone["zone-b"] != 2 {
			t.Errorf("existing node %v: pods per zone %v, want 2 and 2", existing, perZone)
		}
		for _, e := range checkPlan(in, plan) {
			t.Errorf("existing node %v: %s", existing, e)
		}
	}
}
