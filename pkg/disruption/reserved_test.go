package disruption_test

import (
	"testing"
)

// A node in a capacity reservation is priced as the AWS provider records
// it (a sliver of on-demand: the reservation is paid for anyway), so
// consolidation never replaces it with a paid node to save money, while
// the same node on-demand is replaced by a smaller one.
func TestReservedNodeIsNotReplacedByPaidCapacity(t *testing.T) {
	for _, tc := range []struct {
		ct          string
		wantReplace bool
	}{{"on-demand", true}, {"reserved", false}} {
		t.Run(tc.ct, func(t *testing.T) {
			f := newFleet(types(family("m5")), "on-demand", "reserved", "spot")
			f.node("m5.2xlarge", tc.ct, "500m", "500m")
			if tc.ct == "reserved" {
				od := 0.0
				for _, o := range f.types["m5.2xlarge"].Offerings {
					if o.CapacityType == "on-demand" {
						od = o.Price
					}
				}
				f.in.Nodes[0].PricePerHour = od * 1e-4
			}
			plan := compute(t, f.input(open()))
			if got := len(plan.Commands) > 0; got != tc.wantReplace {
				t.Fatalf("%s node: commands %+v, kept %+v; want a replacement %v", tc.ct, plan.Commands, plan.Kept, tc.wantReplace)
			}
		})
	}
}

// A reserved node whose pods fit on an existing paid node is not deleted
// to save money: the reservation is paid for anyway, so moving its pods
// onto the paid node saves nothing. The same node on-demand is deleted.
func TestReservedNodeNotDeletedOntoPaidCapacity(t *testing.T) {
	for _, tc := range []struct {
		ct         string
		wantDelete bool
	}{{"on-demand", true}, {"reserved", false}} {
		t.Run(tc.ct, func(t *testing.T) {
			f := newFleet(types(family("m5")), "on-demand", "reserved", "spot")
			small := f.node("m5.large", tc.ct, "500m")
			f.node("m5.2xlarge", "on-demand", "1")
			if tc.ct == "reserved" {
				od := 0.0
				for _, o := range f.types["m5.large"].Offerings {
					if o.CapacityType == "on-demand" {
						od = o.Price
					}
				}
				f.in.Nodes[0].PricePerHour = od * 1e-4
			}
			plan := compute(t, f.input(open()))
			deleted := false
			for _, c := range plan.Commands {
				for _, n := range c.Nodes {
					if n == small {
						deleted = true
					}
				}
			}
			if deleted != tc.wantDelete {
				t.Fatalf("%s node %s: commands %+v, kept %+v; want deleted %v", tc.ct, small, plan.Commands, plan.Kept, tc.wantDelete)
			}
		})
	}
}
