package engine_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// A higher-weight pool with a limit keeps every pod it has room for, even
// when a lower-weight pool is cheaper (a Savings Plan pool over a spot
// fallback): improvement may not trade weight for price. It once did,
// because the claims a re-pack empties hold their pool's limit until the
// re-pack is kept, so the re-pack saw the weighted pool full.
func TestImprovementKeepsPoolWeight(t *testing.T) {
	amd := req(corev1.LabelArchStable, requirements.In, "amd64")
	in := &engine.Input{
		NodePools: []engine.NodePool{
			{Name: "committed", Weight: 2, InstanceTypes: testTypes(), Labels: map[string]string{"team": "a"},
				Limits:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40")},
				Requirements: requirements.NewRequirements(amd, req(labelCPU, requirements.Gt, "3"))},
			{Name: "spot", InstanceTypes: testTypes(), Labels: map[string]string{"team": "a"},
				Requirements: requirements.NewRequirements(amd, req("karpenter.sh/capacity-type", requirements.In, "spot", "on-demand"))},
		},
		DaemonSets: []*appsv1.DaemonSet{daemonSet("agent", "500m", "512Mi", nil)},
		Pods:       replicas(14, "web", "2", "3Gi"),
	}
	plan, err := engine.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if errs := checkPlan(in, plan); len(errs) > 0 {
		t.Fatalf("plan fails the checker:\n%s", describeErrs(errs))
	}
	cpu := int64(0)
	for _, c := range plan.NodeClaims {
		if c.NodePool != "committed" {
			t.Errorf("claim %s (%d pods) is in pool %s: the weight-2 pool has room for all 14 pods within its 40-cpu limit", c.Offering.InstanceType, len(c.Pods), c.NodePool)
			continue
		}
		for _, it := range testTypes() {
			if it.Name == c.Offering.InstanceType {
				cpu += it.Capacity.Cpu().Value()
			}
		}
	}
	if cpu > 40 || len(plan.Unschedulable) != 0 {
		t.Errorf("committed pool's claims hold %d cpu (limit 40), %d pods unschedulable", cpu, len(plan.Unschedulable))
	}
}
