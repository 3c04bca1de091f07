package engine_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// withReservation adds to type name a reserved offering in zone for a
// reservation with room for n instances, priced at a sliver of on-demand
// as the AWS provider prices one.
func withReservation(types []*cloudprovider.InstanceType, name, zone, id string, n int) {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{
					Zone: zone, ZoneID: o.ZoneID, CapacityType: cloudprovider.CapacityTypeReserved, Price: o.Price * 1e-4,
					Available: n > 0, ReservationID: id, ReservationType: "default", ReservedCapacity: n,
				})
				return
			}
		}
	}
}

// A reservation with room for 3 and 5 one-per-node pods that fit its
// type: 3 claims are planned into the reservation (reserved, its zone),
// and the 2 others on the pool's other capacity type, with reserved left
// out of their requirements so their launch cannot take it either.
func TestReservedOfferingsFillTheReservationThenFallBack(t *testing.T) {
	p := pool("default", 10, req(labelCT, requirements.In, cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved))
	withReservation(p.InstanceTypes, "c.8x", "zone-b", "cr-1", 3)
	pods := replicas(5, "w", "6", "8Gi", withLabels("app", "w"), withAnti(corev1.LabelHostname, sel("app", "w")))
	plan := solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{p}})
	if len(plan.NodeClaims) != 5 || len(plan.Unschedulable) != 0 {
		t.Fatalf("%d claims, %d unschedulable; want 5 and 0", len(plan.NodeClaims), len(plan.Unschedulable))
	}
	reserved, other := 0, 0
	for _, c := range plan.NodeClaims {
		cts := c.Requirements.Get(labelCT)
		if c.Offering.CapacityType == cloudprovider.CapacityTypeReserved {
			reserved++
			if c.Offering.InstanceType != "c.8x" || c.Offering.Zone != "zone-b" {
				t.Errorf("%s: reserved offering %+v is not the reservation's", c.Name, c.Offering)
			}
			continue
		}
		other++
		if c.Offering.CapacityType != cloudprovider.CapacityTypeOnDemand {
			t.Errorf("%s: offering %+v, want on-demand", c.Name, c.Offering)
		}
		if cts.Has(cloudprovider.CapacityTypeReserved) {
			t.Errorf("%s: planned outside the full reservation but its requirements allow reserved: %s", c.Name, cts)
		}
		// The cheapest on-demand type holding one pod, not the reservation's.
		name, price := cheapestFit(testTypes(), rl("6", "8Gi"), nil, nil, onDemand)
		if c.Offering.InstanceType != name || c.Offering.Price != price {
			t.Errorf("%s: %s at %g, want the cheapest on-demand fit %s at %g", c.Name, c.Offering.InstanceType, c.Offering.Price, name, price)
		}
	}
	if reserved != 3 || other != 2 {
		t.Errorf("%d reserved and %d other claims, want 3 and 2", reserved, other)
	}

	// A full reservation (no room, so not available) plans nothing into it.
	p2 := pool("default", 10, req(labelCT, requirements.In, cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved))
	withReservation(p2.InstanceTypes, "c.8x", "zone-b", "cr-1", 0)
	plan = solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{p2}})
	for _, c := range plan.NodeClaims {
		if c.Offering.CapacityType == cloudprovider.CapacityTypeReserved {
			t.Errorf("%s planned into a full reservation", c.Name)
		}
	}
}

// A reserved offering of no counted reservation (a simulate catalog's) is
// not limited: every claim that prefers it gets it.
func TestUncountedReservedOfferingIsNotLimited(t *testing.T) {
	p := pool("default", 10, req(labelCT, requirements.In, cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved))
	withReservation(p.InstanceTypes, "c.8x", "zone-b", "", 0)
	for _, it := range p.InstanceTypes {
		for i := range it.Offerings {
			if it.Offerings[i].CapacityType == cloudprovider.CapacityTypeReserved {
				it.Offerings[i].Available = true
			}
		}
	}
	pods := replicas(5, "w", "6", "8Gi", withLabels("app", "w"), withAnti(corev1.LabelHostname, sel("app", "w")))
	plan := solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{p}})
	for _, c := range plan.NodeClaims {
		if c.Offering.CapacityType != cloudprovider.CapacityTypeReserved {
			t.Errorf("%s: %+v, want the uncounted reserved offering", c.Name, c.Offering)
		}
	}
	if len(plan.NodeClaims) != 5 {
		t.Errorf("%d claims", len(plan.NodeClaims))
	}
}
