package aws

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// mkType builds a type with on-demand price od and spot price spot (0: no
// spot) in zones a and b.
func mkType(name, arch string, cpu int64, od, spot float64) *cloudprovider.InstanceType {
	it := &cloudprovider.InstanceType{
		Name:     name,
		Labels:   map[string]string{"node.kubernetes.io/instance-type": name, "kubernetes.io/arch": arch},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI)},
		Overhead: cloudprovider.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}
	for _, z := range []string{"z-a", "z-b"} {
		it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: "on-demand", Price: od, Available: true})
		if spot > 0 {
			it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: "spot", Price: spot, Available: true})
		}
	}
	return it
}

func reqs(t *testing.T, kv ...string) requirements.Requirements {
	t.Helper()
	var rs requirements.Requirements
	for i := 0; i+1 < len(kv); i += 2 {
		rs.Add(requirements.MustNew(kv[i], requirements.In, []string{kv[i+1]}, nil))
	}
	return rs
}

func TestPlanLaunch(t *testing.T) {
	types := []*cloudprovider.InstanceType{
		mkType("small", "amd64", 2, 0.10, 0.03),
		mkType("medium", "amd64", 4, 0.20, 0.05),
		mkType("big", "amd64", 8, 0.40, 0.50), // spot dearer than on-demand
		mkType("arm", "arm64", 4, 0.08, 0),
	}
	cpu := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
	}
	both := func(rs requirements.Requirements) requirements.Requirements {
		rs.Add(requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"spot", "on-demand"}, nil))
		return rs
	}
	tests := []struct {
		name      string
		reqs      requirements.Requirements
		requests  corev1.ResourceList
		max       int
		wantCT    string
		wantTypes []string
	}{
		{name: "unconstrained capacity type is on-demand", reqs: reqs(t), requests: cpu("1"), max: 60, wantCT: "on-demand", wantTypes: []string{"arm", "small", "medium", "big"}},
		{name: "spot when allowed and cheaper", reqs: both(reqs(t, "kubernetes.io/arch", "amd64")), requests: cpu("1"), max: 60, wantCT: "spot", wantTypes: []string{"small", "medium", "big"}},
		{name: "spot beats the on-demand of another type", reqs: both(reqs(t)), requests: cpu("1"), max: 60, wantCT: "spot", wantTypes: []string{"small", "medium", "big"}},
		{name: "requests filter small types", reqs: reqs(t, "kubernetes.io/arch", "amd64"), requests: cpu("3"), max: 60, wantCT: "on-demand", wantTypes: []string{"medium", "big"}},
		{name: "overhead counts", reqs: reqs(t, "kubernetes.io/arch", "amd64"), requests: cpu("2"), max: 60, wantCT: "on-demand", wantTypes: []string{"medium", "big"}},
		{name: "cap on the number of types", reqs: reqs(t), requests: cpu("1"), max: 2, wantCT: "on-demand", wantTypes: []string{"arm", "small"}},
		{name: "zone restriction", reqs: reqs(t, "topology.kubernetes.io/zone", "z-b", "node.kubernetes.io/instance-type", "small"), requests: nil, max: 60, wantCT: "on-demand", wantTypes: []string{"small"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := PlanLaunch(types, tc.reqs, nil, tc.requests, "r-1", tc.max)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, pt := range plan.Types {
				names = append(names, pt.Type.Name)
				for _, o := range pt.Offerings {
					if o.CapacityType != plan.CapacityType {
						t.Errorf("%s offering of capacity type %s in a %s plan", pt.Type.Name, o.CapacityType, plan.CapacityType)
					}
				}
			}
			if plan.CapacityType != tc.wantCT || fmt.Sprint(names) != fmt.Sprint(tc.wantTypes) {
				t.Errorf("plan = %s %v, want %s %v", plan.CapacityType, names, tc.wantCT, tc.wantTypes)
			}
		})
	}
}

func TestPlanLaunchSpotOnlyWhenCheaper(t *testing.T) {
	// Both allowed; the compatible set's spot prices are all above its
	// cheapest on-demand price: on-demand wins.
	types := []*cloudprovider.InstanceType{mkType("a", "amd64", 4, 0.10, 0.12), mkType("b", "amd64", 4, 0.30, 0.11)}
	rs := reqs(t)
	rs.Add(requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"spot", "on-demand"}, nil))
	plan, err := PlanLaunch(types, rs, nil, nil, "r-1", 60)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CapacityType != "on-demand" {
		t.Errorf("capacity type %s; no spot offering is below the cheapest on-demand 0.10", plan.CapacityType)
	}
}

func TestPlanLaunchErrors(t *testing.T) {
	unavailable := mkType("x", "amd64", 4, 0.1, 0.05)
	for i := range unavailable.Offerings {
		if unavailable.Offerings[i].CapacityType == "spot" {
			unavailable.Offerings[i].Available = false
		}
	}
	spotOnly := reqs(t, "karpenter.sh/capacity-type", "spot")
	_, err := PlanLaunch([]*cloudprovider.InstanceType{unavailable}, spotOnly, nil, nil, "r-1", 60)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 2 {
		t.Errorf("all spot unavailable: %v, want InsufficientCapacityError for 2 offerings", err)
	}
	_, err = PlanLaunch([]*cloudprovider.InstanceType{unavailable}, reqs(t, "kubernetes.io/arch", "arm64"), nil, nil, "r-1", 60)
	var ce *cloudprovider.CreateError
	if !errors.As(err, &ce) || ce.Reason != ReasonNoCompatibleInstanceTypes {
		t.Errorf("no compatible type: %v", err)
	}
	_, err = PlanLaunch([]*cloudprovider.InstanceType{unavailable}, reqs(t, "topology.kubernetes.io/region", "elsewhere"), nil, nil, "r-1", 60)
	if !errors.As(err, &ce) {
		t.Errorf("wrong region: %v", err)
	}
}

func planNames(plan Plan) []string {
	var names []string
	for _, pt := range plan.Types {
		names = append(names, pt.Type.Name)
	}
	return names
}

// With options, the engine's order is kept even where the price order
// differs, and nothing is filtered by fit.
func TestPlanLaunchKeepsEngineOrder(t *testing.T) {
	types := []*cloudprovider.InstanceType{
		mkType("small", "amd64", 2, 0.10, 0.03),
		mkType("medium", "amd64", 4, 0.20, 0.05),
		mkType("big", "amd64", 8, 0.40, 0.50),
	}
	rs := reqs(t)
	rs.Add(requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"spot", "on-demand"}, nil))
	plan, err := PlanLaunch(types, rs, []string{"medium", "small", "big"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, "r-1", 60)
	if err != nil {
		t.Fatal(err)
	}
	// medium's cheapest offering is spot 0.05: the capacity type.
	if plan.CapacityType != "spot" || fmt.Sprint(planNames(plan)) != "[medium small big]" || len(plan.Narrowed) != 0 {
		t.Errorf("plan = %s %v narrowed %v", plan.CapacityType, planNames(plan), plan.Narrowed)
	}
}

// Offerings that became unavailable since the plan narrow the launch, and
// the plan says which.
func TestPlanLaunchNarrowsOnlyUnavailable(t *testing.T) {
	gone := mkType("medium", "amd64", 4, 0.20, 0.05)
	for i := range gone.Offerings {
		if gone.Offerings[i].CapacityType == "spot" {
			gone.Offerings[i].Available = false
		}
	}
	types := []*cloudprovider.InstanceType{mkType("small", "amd64", 2, 0.10, 0.03), gone, mkType("big", "amd64", 8, 0.40, 0.45)}
	rs := reqs(t, "karpenter.sh/capacity-type", "spot")
	plan, err := PlanLaunch(types, rs, []string{"small", "medium", "vanished", "big"}, nil, "r-1", 60)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(planNames(plan)) != "[small big]" {
		t.Errorf("types %v, want [small big]", planNames(plan))
	}
	want := "[vanished (not offered by the node class) medium (spot offerings unavailable since the plan)]"
	if fmt.Sprint(plan.Narrowed) != want {
		t.Errorf("narrowed %v, want %s", plan.Narrowed, want)
	}
}

func TestPlanLaunchMinValues(t *testing.T) {
	const fam = "karpenter.k8s.aws/instance-family"
	var types []*cloudprovider.InstanceType
	var options []string
	for i := range 80 {
		f := "a"
		if i >= 75 {
			f = fmt.Sprintf("f%d", i)
		}
		it := mkType(fmt.Sprintf("t%02d", i), "amd64", 4, 0.1+float64(i)/1000, 0)
		it.Labels[fam] = f
		types = append(types, it)
		options = append(options, it.Name)
	}
	three := 3
	rs := reqs(t)
	rs.Add(requirements.MustNew(fam, requirements.Exists, nil, &three))
	plan, err := PlanLaunch(types, rs, options, nil, "r-1", 60)
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]bool{}
	for _, pt := range plan.Types {
		fams[pt.Type.Labels[fam]] = true
	}
	if len(plan.Types) != 60 || len(fams) < 3 {
		t.Errorf("%d types in %d families, want 60 in at least 3", len(plan.Types), len(fams))
	}
	// Offerings of f75..f79 unavailable: minValues 3 cannot hold.
	for _, it := range types[75:] {
		for i := range it.Offerings {
			it.Offerings[i].Available = false
		}
	}
	_, err = PlanLaunch(types, rs, options, nil, "r-1", 60)
	var ce *cloudprovider.CreateError
	if !errors.As(err, &ce) || ce.Reason != ReasonMinValues {
		t.Errorf("err = %v, want a CreateError with reason %s", err, ReasonMinValues)
	}
}

// With the engine's planned capacity type known, the launch keeps it while
// any option still sells it, and fails with insufficient capacity when
// none does, instead of switching capacity type behind the engine's back.
func TestPlanLaunchKeepsThePlannedCapacityType(t *testing.T) {
	a := mkType("a", "amd64", 4, 0.10, 0.03) // the engine priced a's spot
	b := mkType("b", "amd64", 4, 0.20, 0.05)
	for i := range a.Offerings {
		if a.Offerings[i].CapacityType == "spot" {
			a.Offerings[i].Available = false // gone since the plan
		}
	}
	rs := reqs(t)
	rs.Add(requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"spot", "on-demand"}, nil))
	types := []*cloudprovider.InstanceType{a, b}
	if plan, err := PlanLaunch(types, rs, []string{"a", "b"}, nil, "r-1", 60); err != nil || plan.CapacityType != "on-demand" {
		t.Fatalf("without the planned capacity type: %v %v (the first option's cheapest available is on-demand)", plan.CapacityType, err)
	}
	plan, err := PlanLaunchAt(types, rs, []string{"a", "b"}, "spot", nil, "r-1", 60)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CapacityType != "spot" || fmt.Sprint(planNames(plan)) != "[b]" || len(plan.Narrowed) == 0 {
		t.Errorf("plan = %s %v narrowed %v; want spot on b, narrowed", plan.CapacityType, planNames(plan), plan.Narrowed)
	}
	for i := range b.Offerings {
		if b.Offerings[i].CapacityType == "spot" {
			b.Offerings[i].Available = false
		}
	}
	_, err = PlanLaunchAt(types, rs, []string{"a", "b"}, "spot", nil, "r-1", 60)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 4 {
		t.Errorf("no spot left: %v, want InsufficientCapacityError for the 4 spot offerings", err)
	}
	// An on-demand plan is launched on-demand even where spot is cheaper.
	plan, err = PlanLaunchAt(types, rs, []string{"b", "a"}, "on-demand", nil, "r-1", 60)
	if err != nil || plan.CapacityType != "on-demand" {
		t.Errorf("on-demand plan: %v %v", plan.CapacityType, err)
	}
}

// A NodeClaim's requirements on the capacity reservation's id and type
// narrow its launch to the reserved offerings they allow: a Capacity
// Block only, or one reservation only; with none allowed, no plan.
func TestPlanLaunchReservationRequirements(t *testing.T) {
	block := mkType("p5", "amd64", 8, 1, 0)
	block.Offerings = append(block.Offerings,
		cloudprovider.Offering{Zone: "z-a", CapacityType: "reserved", Price: 1e-4, Available: true, ReservationID: "cr-odcr", ReservationType: "default", ReservedCapacity: 2},
		cloudprovider.Offering{Zone: "z-b", CapacityType: "reserved", Price: 1e-4, Available: true, ReservationID: "cr-block", ReservationType: "capacity-block", ReservedCapacity: 2})
	types := []*cloudprovider.InstanceType{block}
	reserved := func(kv ...string) requirements.Requirements {
		rs := reqs(t, kv...)
		rs.Add(requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"reserved", "on-demand"}, nil))
		return rs
	}
	for _, tc := range []struct {
		name     string
		reqs     requirements.Requirements
		wantZone string // of the one reserved offering planned
	}{
		{"blocks only", reserved("karpenter.k8s.aws/capacity-reservation-type", "capacity-block"), "z-b"},
		{"one reservation", reserved("karpenter.k8s.aws/capacity-reservation-id", "cr-odcr"), "z-a"},
	} {
		plan, err := PlanLaunchAt(types, tc.reqs, nil, "reserved", nil, "r-1", 60)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if plan.CapacityType != "reserved" || len(plan.Types) != 1 || len(plan.Types[0].Offerings) != 1 || plan.Types[0].Offerings[0].Zone != tc.wantZone {
			t.Errorf("%s: plan %s %+v, want the one reserved offering in %s", tc.name, plan.CapacityType, plan.Types, tc.wantZone)
		}
	}
	if _, err := PlanLaunchAt(types, reserved("karpenter.k8s.aws/capacity-reservation-id", "cr-gone"), nil, "reserved", nil, "r-1", 60); err == nil {
		t.Error("a reservation id no offering has: planned, want an error")
	}
}
