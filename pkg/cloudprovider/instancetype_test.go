package cloudprovider

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAllocatableSubtractsEveryOverheadAndFloorsAtZero(t *testing.T) {
	it := &InstanceType{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("29"),
		},
		Overhead: Overhead{
			KubeReserved:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("70m"), corev1.ResourceMemory: resource.MustParse("574Mi")},
			SystemReserved:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")},
		},
	}
	a := it.Allocatable()
	if got := a.Cpu().MilliValue(); got != 0 {
		t.Errorf("cpu = %dm, want 0 (reserved exceeds capacity)", got)
	}
	if got, want := a.Memory().Value(), int64(8*1024-574-100)<<20; got != want {
		t.Errorf("memory = %d, want %d", got, want)
	}
	if got := a.Pods().Value(); got != 29 {
		t.Errorf("pods = %d, want 29", got)
	}
	if got := it.Capacity.Cpu().MilliValue(); got != 2000 {
		t.Errorf("Allocatable modified Capacity: cpu %dm", got)
	}
}

func TestOfferingsCheapestIsDeterministic(t *testing.T) {
	os := Offerings{
		{Zone: "b", CapacityType: CapacityTypeSpot, Price: 0.1, Available: true},
		{Zone: "a", CapacityType: CapacityTypeSpot, Price: 0.1, Available: false},
		{Zone: "c", CapacityType: CapacityTypeOnDemand, Price: 0.1, Available: true},
		{Zone: "a", CapacityType: CapacityTypeOnDemand, Price: 0.3, Available: true},
	}
	if o, _ := os.Cheapest(); o.Zone != "c" || o.CapacityType != CapacityTypeOnDemand {
		t.Errorf("Cheapest = %+v, want on-demand in c (ties prefer on-demand)", o)
	}
	av := os.Available()
	if len(av) != 3 {
		t.Fatalf("Available kept %d offerings, want 3", len(av))
	}
	if o, _ := av.Cheapest(); o.Zone != "c" {
		t.Errorf("Available().Cheapest = %+v", o)
	}
	if got := (Offerings{}).MinPrice(); !math.IsInf(got, 1) {
		t.Errorf("MinPrice of none = %v, want +Inf", got)
	}
	av.Sort()
	if av[0].Zone != "c" || av[1].Zone != "b" || av[2].Price != 0.3 {
		t.Errorf("Sort order = %+v", av)
	}
}
