package aws_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// apiPool is a NodePool as a user writes it, for the provider's node class.
func apiPool(e *env, name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	np := pool(e, e.class)
	np.Name = name
	np.Spec.Template.Spec.Requirements = reqs
	return np
}

// planClaim runs the pool through the snapshot conversion and the engine,
// and turns the one planned node into a NodeClaim as the provisioner does.
func planClaim(t *testing.T, e *env, np *karpv1.NodePool, pod *corev1.Pod) (engine.NewNodeClaim, *karpv1.NodeClaim, []*cloudprovider.InstanceType) {
	t.Helper()
	types, err := e.p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := snapshot.NodePool(np, e.class, types, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.Solve(&engine.Input{
		Pods: []*corev1.Pod{pod}, NodePools: []engine.NodePool{ep},
		Region: e.emu.Options().Region, Options: engine.Options{SkipLowerBound: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NodeClaims) != 1 {
		t.Fatalf("plan: %d NodeClaims, unschedulable %v", len(plan.NodeClaims), plan.Unschedulable)
	}
	planned := plan.NodeClaims[0]
	nc := provisioning.NewNodeClaim(np, &planned, types, "test", 0)
	nc.Name = fmt.Sprintf("%s-%d", np.Name, claimSeq.Add(1))
	return planned, nc, types
}

func podRequesting(cpu, mem string, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
	}
}

// A NodePool asking for at least N instance families gets a CreateFleet
// request (as the emulator receives it) whose overrides span at least N
// families, where the 60 cheapest options span fewer.
func TestMinValuesReachCreateFleet(t *testing.T) {
	e := newEnv(t, envOptions{})
	base := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
		{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
	}
	// A memory-heavy pod: its 60 cheapest options span fewer than 50
	// families (50 is the CRD's largest minValues).
	pod := podRequesting("500m", "30Gi", nil)
	free, _, types := planClaim(t, e, apiPool(e, "free", base...), pod)
	family := map[string]string{}
	for _, it := range types {
		family[it.Name] = it.Labels[awsv1.LabelInstanceFamily]
	}
	distinct := func(names []string) int {
		m := map[string]bool{}
		for _, n := range names {
			m[family[n]] = true
		}
		return len(m)
	}
	if len(free.InstanceTypeOptions) <= 60 {
		t.Fatalf("the engine planned only %d options; the test needs more than 60 to truncate", len(free.InstanceTypeOptions))
	}
	d60, dAll := distinct(free.InstanceTypeOptions[:60]), distinct(free.InstanceTypeOptions)
	if dAll <= d60 {
		t.Fatalf("the 60 cheapest options span all %d families; the test needs more families beyond them", dAll)
	}
	families := min(d60+5, dAll, 50)
	if families <= d60 {
		t.Fatalf("the 60 cheapest options span %d families; the test needs fewer than %d", d60, families)
	}
	t.Logf("the 60 cheapest options span %d of %d families; asking for %d", d60, dAll, families)
	np := apiPool(e, "families", append(base, karpv1.NodeSelectorRequirementWithMinValues{
		Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpExists, MinValues: ptr(families)})...)
	_, nc, _ := planClaim(t, e, np, pod)
	e.emu.ResetCalls()
	before := len(e.emu.FleetRequests())
	if _, err := e.p.Create(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	reqs := e.emu.FleetRequests()[before:]
	if len(reqs) != 1 {
		t.Fatalf("%d CreateFleet requests, want 1", len(reqs))
	}
	var sent []string
	for _, o := range reqs[0].Overrides {
		if !slices.Contains(sent, o.InstanceType) {
			sent = append(sent, o.InstanceType)
		}
	}
	if len(sent) > 60 {
		t.Errorf("CreateFleet got %d instance types, more than 60", len(sent))
	}
	if d := distinct(sent); d < families {
		t.Errorf("CreateFleet got %d instance types in %d families; the NodePool asks for at least %d", len(sent), d, families)
	}
	if reqs[0].AllocationStrategy != "lowest-price" || reqs[0].CapacityType != "on-demand" {
		t.Errorf("on-demand fleet sent with strategy %q, capacity type %q", reqs[0].AllocationStrategy, reqs[0].CapacityType)
	}
}

// Over a few hundred seeded pods and pools, what the emulator launches is
// one of the engine's options at the engine's capacity type; with every
// offering equally spare and no fault, it is the engine's first choice
// (the offering it priced); with seeded insufficient capacity injected
// behind the planner's back, it is still among the options. Spot fleets
// are sent with price-capacity-optimized, on-demand with lowest-price.
func TestLaunchIsTheEnginesDecision(t *testing.T) {
	e := newEnv(t, envOptions{})
	const n = 200
	rng := rand.New(rand.NewPCG(42, 7))
	uniform := func() {
		if err := e.emu.SetCapacity(awsemu.CapacityRule{Spare: 50}); err != nil {
			t.Fatal(err)
		}
	}
	uniform()
	archs := [][]string{{"amd64"}, {"arm64"}, {"amd64", "arm64"}}
	cts := [][]string{{"spot"}, {"on-demand"}, {"spot", "on-demand"}}
	firstChoice, iced := 0, 0
	for i := range n {
		np := apiPool(e, "seeded",
			karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: archs[rng.IntN(len(archs))]},
			karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: cts[rng.IntN(len(cts))]},
			karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r", "t"}[:1+rng.IntN(4)]},
		)
		cpu := strconv.Itoa(100*(1+rng.IntN(40))) + "m"
		mem := strconv.Itoa(128*(1+rng.IntN(64))) + "Mi"
		planned, nc, _ := planClaim(t, e, np, podRequesting(cpu, mem, nil))
		fault := rng.IntN(4) == 0
		if fault {
			// Take away the planned offering and, sometimes, the next
			// option's, without telling the planner.
			e.emu.InjectICE(planned.Offering.InstanceType, planned.Offering.Zone, planned.Offering.CapacityType)
			if len(planned.InstanceTypeOptions) > 1 && rng.IntN(2) == 0 {
				e.emu.InjectICE(planned.InstanceTypeOptions[1], "", planned.Offering.CapacityType)
			}
		}
		before := len(e.emu.FleetRequests())
		got, err := e.p.Create(e.ctx, nc)
		if fault {
			e.emu.ClearFaults()
			uniform()
		}
		if err != nil {
			if fault && cloudprovider.IsInsufficientCapacity(err) {
				continue // every option was refused: the provisioner re-plans
			}
			t.Fatalf("claim %d (%s %s, %v): %v", i, cpu, mem, planned.Offering, err)
		}
		typ, ct := got.Labels[karpv1.LabelInstanceType], got.Labels[karpv1.CapacityTypeLabelKey]
		if !slices.Contains(planned.InstanceTypeOptions, typ) {
			t.Errorf("claim %d: launched %s, not among the engine's %d options", i, typ, len(planned.InstanceTypeOptions))
		}
		if ct != planned.Offering.CapacityType {
			t.Errorf("claim %d: launched %s, the engine planned %s", i, ct, planned.Offering.CapacityType)
		}
		if !fault && typ != planned.Offering.InstanceType {
			t.Errorf("claim %d: launched %s, the engine's first choice is %s (%v)", i, typ, planned.Offering.InstanceType, planned.InstanceTypeOptions[:min(5, len(planned.InstanceTypeOptions))])
		}
		if !fault {
			firstChoice++
		} else {
			iced++
		}
		reqs := e.emu.FleetRequests()[before:]
		if len(reqs) != 1 {
			t.Fatalf("claim %d: %d CreateFleet requests", i, len(reqs))
		}
		want := map[string]string{"spot": "price-capacity-optimized", "on-demand": "lowest-price"}[ct]
		if reqs[0].AllocationStrategy != want {
			t.Errorf("claim %d: %s fleet sent with strategy %q, want %q", i, ct, reqs[0].AllocationStrategy, want)
		}
		// The request keeps the engine's order within each launch
		// template (one per image architecture).
		order := map[string][]int{}
		for _, o := range reqs[0].Overrides {
			order[o.LaunchTemplateID] = append(order[o.LaunchTemplateID], slices.Index(planned.InstanceTypeOptions, o.InstanceType))
		}
		for lt, idx := range order {
			if !slices.IsSorted(idx) || slices.Contains(idx, -1) {
				t.Errorf("claim %d: the overrides of %s are not in the engine's order (option indexes %v)", i, lt, idx)
			}
		}
		if err := e.p.Delete(e.ctx, got); err != nil && !cloudprovider.IsNodeClaimNotFound(err) {
			t.Fatal(err)
		}
	}
	t.Logf("%d launches of the engine's first choice, %d under injected ICE", firstChoice, iced)
	if firstChoice < n/2 || iced < n/10 {
		t.Errorf("seeds gave %d fault-free and %d faulted launches; want both well represented", firstChoice, iced)
	}
}
