package catalog

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// TestInstanceTypesOfferings rebuilds the expected offerings of every type in
// us-east-1 from the catalog's lookups and compares them with InstanceTypes.
func TestInstanceTypesOfferings(t *testing.T) {
	c := Builtin()
	const region = "us-east-1"
	zones := c.Zones(region)
	its := c.InstanceTypes(region, nil, KubeletSettings{})
	byName := map[string]*cloudprovider.InstanceType{}
	for i, it := range its {
		if i > 0 && its[i-1].Name >= it.Name {
			t.Fatalf("not sorted by name at %s", it.Name)
		}
		byName[it.Name] = it
	}
	onDemandOnly, unpriced := 0, 0
	for _, ty := range c.Types() {
		od, priced := c.OnDemandPrice(region, ty.Name)
		var want cloudprovider.Offerings
		for _, z := range zones {
			if !priced || !c.Offered(region, z.Name, ty.Name) {
				continue
			}
			if ty.OnDemandSupported {
				want = append(want, cloudprovider.Offering{Zone: z.Name, ZoneID: z.ID, CapacityType: cloudprovider.CapacityTypeOnDemand, Price: od, Available: true})
			}
			if ty.SpotSupported {
				want = append(want, cloudprovider.Offering{Zone: z.Name, ZoneID: z.ID, CapacityType: cloudprovider.CapacityTypeSpot, Price: SpotPrice(region, z.Name, ty.Name, od), Available: true})
			}
		}
		it, ok := byName[ty.Name]
		if len(want) == 0 {
			if ok {
				t.Errorf("%s listed without offerings", ty.Name)
			}
			if !priced {
				unpriced++
			}
			continue
		}
		if !ok {
			t.Errorf("%s missing", ty.Name)
			continue
		}
		if !slices.Equal(it.Offerings, want) {
			t.Errorf("%s offerings\n got %v\nwant %v", ty.Name, it.Offerings, want)
		}
		if !ty.SpotSupported {
			onDemandOnly++
		}
		if !maps.Equal(it.Labels, ty.Labels()) {
			t.Errorf("%s: labels differ from Type.Labels", ty.Name)
		}
		if !equalLists(it.Capacity, ty.Capacity(KubeletSettings{})) {
			t.Errorf("%s: capacity differs from Type.Capacity", ty.Name)
		}
		o := ty.Overhead(KubeletSettings{})
		if !equalLists(it.Overhead.Total(), o.Total()) {
			t.Errorf("%s: overhead differs from Type.Overhead", ty.Name)
		}
	}
	if onDemandOnly == 0 || unpriced == 0 {
		t.Errorf("the data should exercise on-demand-only types (%d) and unpriced types (%d)", onDemandOnly, unpriced)
	}
	if _, ok := byName["trn2.48xlarge"]; ok {
		t.Error("trn2.48xlarge has no us-east-1 price and must not be listed")
	}
}

func TestInstanceTypesZones(t *testing.T) {
	c := Builtin()
	names := func(its []*cloudprovider.InstanceType) []string {
		var out []string
		for _, it := range its {
			out = append(out, it.Name)
		}
		return out
	}
	zonesOf := func(its []*cloudprovider.InstanceType) map[string]bool {
		out := map[string]bool{}
		for _, it := range its {
			for _, o := range it.Offerings {
				out[o.Zone] = true
			}
		}
		return out
	}
	byName := c.InstanceTypes("us-east-1", []string{"us-east-1b", "us-east-1a"}, KubeletSettings{})
	byID := c.InstanceTypes("us-east-1", []string{"use1-az2", "use1-az4", "use1-az4", "nowhere"}, KubeletSettings{})
	if !slices.Equal(names(byName), names(byID)) || len(byName) == 0 {
		t.Errorf("by name %d types, by id %d types", len(byName), len(byID))
	}
	if got := zonesOf(byID); !maps.Equal(got, map[string]bool{"us-east-1a": true, "us-east-1b": true}) {
		t.Errorf("zones %v", got)
	}
	for i := range byName {
		if !slices.Equal(byName[i].Offerings, byID[i].Offerings) {
			t.Fatalf("%s: offerings depend on how zones are named", byName[i].Name)
		}
	}
	tests := []struct {
		name, region string
		zones        []string
	}{
		{"unknown region", "mars-north-1", nil},
		{"region without zone data", "us-gov-west-1", nil},
		{"only unknown zones", "us-east-1", []string{"us-west-2a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.InstanceTypes(tt.region, tt.zones, KubeletSettings{}); got != nil {
				t.Errorf("got %d types, want none", len(got))
			}
		})
	}
}

// Each call builds its own capacities and offerings.
func TestInstanceTypesFreshValues(t *testing.T) {
	c := Builtin()
	first := c.InstanceTypes("us-east-1", []string{"us-east-1a"}, KubeletSettings{})
	first[0].Capacity[corev1.ResourceCPU] = resource.MustParse("999")
	first[0].Offerings[0].Price = -1
	first[0].Offerings[0].Available = false
	second := c.InstanceTypes("us-east-1", []string{"us-east-1a"}, KubeletSettings{})
	if q := second[0].Capacity[corev1.ResourceCPU]; q.Value() == 999 {
		t.Error("capacity shared between calls")
	}
	if o := second[0].Offerings[0]; o.Price < 0 || !o.Available {
		t.Error("offerings shared between calls")
	}
	// Offerings of different types do not alias: appending to one must not
	// overwrite the next.
	before := slices.Clone(second[1].Offerings)
	_ = append(second[0].Offerings, cloudprovider.Offering{Zone: "x"})
	if !slices.Equal(second[1].Offerings, before) {
		t.Error("appending to one type's offerings changed another's")
	}
}

func TestInstanceTypesHonourSettings(t *testing.T) {
	c := Builtin()
	maxPods := int32(17)
	s := KubeletSettings{MaxPods: &maxPods, EvictionHard: map[string]string{"memory.available": "10%"}}
	for _, it := range c.InstanceTypes("eu-west-1", nil, s) {
		if p := it.Capacity.Pods().Value(); p != 17 {
			t.Fatalf("%s: pods %d", it.Name, p)
		}
		ty, _ := c.Type(it.Name)
		if !equalLists(it.Overhead.Total(), ty.Overhead(s).Total()) {
			t.Fatalf("%s: overhead differs from Type.Overhead", it.Name)
		}
	}
}
