package aws_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// seedPools are the seed cluster's two pools (examples/): arm64 spot at
// weight 20, and both architectures, spot or on-demand, at weight 10.
func seedPools(t *testing.T, types []*cloudprovider.InstanceType) []engine.NodePool {
	t.Helper()
	req := func(key string, op requirements.Operator, values ...string) *requirements.Requirement {
		r, err := requirements.New(key, op, values, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	return []engine.NodePool{
		{
			Name: "arm64-default", Weight: 20, InstanceTypes: types,
			Requirements: requirements.NewRequirements(
				req("kubernetes.io/arch", requirements.In, "arm64"),
				req("karpenter.sh/capacity-type", requirements.In, "spot"),
				req("karpenter.k8s.aws/instance-category", requirements.In, "c", "m", "r"),
				req("karpenter.k8s.aws/instance-generation", requirements.Gt, "5"),
			),
		},
		{
			Name: "multi-default", Weight: 10, InstanceTypes: types,
			Requirements: requirements.NewRequirements(
				req("kubernetes.io/arch", requirements.In, "amd64", "arm64"),
				req("karpenter.sh/capacity-type", requirements.In, "spot", "on-demand"),
				req("karpenter.k8s.aws/instance-category", requirements.In, "c", "m", "r"),
				req("karpenter.k8s.aws/instance-generation", requirements.Gt, "4"),
			),
		},
	}
}

func pendingPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
	}
}

// claimFromPlan turns the engine's planned node into a NodeClaim for the
// provider, as the provisioning controller will.
func (e *env) claimFromPlan(nc engine.NewNodeClaim) *karpv1.NodeClaim {
	c := e.claimFor(e.class, nc.NodePool)
	c.Name = nc.Name
	for k, v := range nc.Labels {
		if k != karpv1.LabelHostname {
			c.Labels[k] = v
		}
	}
	c.Spec.Requirements = nil
	for _, r := range nc.Requirements.NodeSelectorRequirements() {
		if r.Key == karpv1.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			// The options in the engine's order of preference, as the
			// provisioner writes them.
			r.Values = nc.InstanceTypeOptions
		}
		c.Spec.Requirements = append(c.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	c.Spec.Resources.Requests = nc.Requests
	return c
}

// TestEngineFallsBackToOnDemandPool feeds the provider's instance types
// into the scheduling engine with the seed cluster's pools: normally the
// arm64 spot pool wins; once EC2 has refused every spot offering (and the
// provider marked them unavailable), the engine plans the on-demand
// fallback pool, and the provider launches that plan.
func TestEngineFallsBackToOnDemandPool(t *testing.T) {
	e := newEnv(t, envOptions{})
	solve := func() engine.NewNodeClaim {
		t.Helper()
		types, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := engine.Solve(&engine.Input{
			Pods: []*corev1.Pod{pendingPod()}, NodePools: seedPools(t, types),
			Region: e.emu.Options().Region, Options: engine.Options{SkipLowerBound: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.NodeClaims) != 1 || len(plan.Unschedulable) != 0 {
			t.Fatalf("plan: %d NodeClaims, unschedulable %v", len(plan.NodeClaims), plan.Unschedulable)
		}
		return plan.NodeClaims[0]
	}

	before := solve()
	if before.NodePool != "arm64-default" || before.Offering.CapacityType != "spot" {
		t.Fatalf("before any ICE the engine planned %s %s", before.NodePool, before.Offering.CapacityType)
	}
	got, err := e.p.Create(e.ctx, e.claimFromPlan(before))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[karpv1.CapacityTypeLabelKey] != "spot" || got.Labels[karpv1.LabelArch] != "arm64" {
		t.Errorf("launched %s/%s for the arm64 spot plan", got.Labels[karpv1.LabelArch], got.Labels[karpv1.CapacityTypeLabelKey])
	}

	// No spot anywhere: the spot-only claim fails with insufficient
	// capacity and its offerings become unavailable...
	e.emu.InjectICE("", "", "spot")
	if _, err := e.p.Create(e.ctx, e.claimFromPlan(before)); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("spot-only launch under ICE = %v, want InsufficientCapacityError", err)
	}
	// ...possibly after several rounds (each CreateFleet offers at most 60
	// types, and only those are marked); re-plan and retry, as the
	// provisioner and lifecycle controllers do, until no spot offering is
	// left to plan.
	rounds := 0
	for ; rounds < 40; rounds++ {
		next := solve()
		if next.Offering.CapacityType != "spot" {
			break
		}
		if _, err := e.p.Create(e.ctx, e.claimFromPlan(next)); !cloudprovider.IsInsufficientCapacity(err) {
			t.Fatalf("spot retry %d = %v, want InsufficientCapacityError", rounds, err)
		}
	}
	t.Logf("%d re-plans until every spot offering was marked unavailable", rounds)
	after := solve()
	if after.NodePool != "multi-default" || after.Offering.CapacityType != "on-demand" {
		t.Fatalf("after the spot ICE the engine planned %s %s; want multi-default on-demand", after.NodePool, after.Offering.CapacityType)
	}
	launched, err := e.p.Create(e.ctx, e.claimFromPlan(after))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" || launched.Labels[karpv1.NodePoolLabelKey] != "multi-default" {
		t.Errorf("launched %v", launched.Labels)
	}
}
