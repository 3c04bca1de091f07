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
			plan, err := PlanLaunch(types, tc.reqs, tc.requests, "r-1", tc.max)
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
	plan, err := PlanLaunch(types, rs, nil, "r-1", 60)
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
	_, err := PlanLaunch([]*cloudprovider.InstanceType{unavailable}, spotOnly, nil, "r-1", 60)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 2 {
		t.Errorf("all spot unavailable: %v, want InsufficientCapacityError for 2 offerings", err)
	}
	_, err = PlanLaunch([]*cloudprovider.InstanceType{unavailable}, reqs(t, "kubernetes.io/arch", "arm64"), nil, "r-1", 60)
	var ce *cloudprovider.CreateError
	if !errors.As(err, &ce) || ce.Reason != ReasonNoCompatibleInstanceTypes {
		t.Errorf("no compatible type: %v", err)
	}
	_, err = PlanLaunch([]*cloudprovider.InstanceType{unavailable}, reqs(t, "topology.kubernetes.io/region", "elsewhere"), nil, "r-1", 60)
	if !errors.As(err, &ce) {
		t.Errorf("wrong region: %v", err)
	}
}
