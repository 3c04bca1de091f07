package engine_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

// A pool's requirements on karpenter.k8s.aws/capacity-reservation-type
// and -id filter its offerings (they are per offering, as the peer's): a
// pool of Capacity Blocks only plans into the block; one of a reservation
// id only into that reservation (spot and on-demand offerings carry no
// id); NotIn keeps the block out. A pool that differs from another only
// by such a requirement is not its twin.
func TestReservationRequirementsFilterOfferings(t *testing.T) {
	const (
		labelResType = "karpenter.k8s.aws/capacity-reservation-type"
		labelResID   = "karpenter.k8s.aws/capacity-reservation-id"
	)
	withBoth := func(p engine.NodePool) engine.NodePool {
		withReservation(p.InstanceTypes, "c.8x", "zone-b", "cr-1", 3)
		withReservation(p.InstanceTypes, "c.8x", "zone-a", "cr-2", 2)
		for _, it := range p.InstanceTypes {
			for i := range it.Offerings {
				if it.Offerings[i].ReservationID == "cr-2" {
					it.Offerings[i].ReservationType = "capacity-block"
				}
			}
		}
		return p
	}
	pods := replicas(5, "w", "6", "8Gi", withLabels("app", "w"), withAnti(corev1.LabelHostname, sel("app", "w")))
	// The planned offering names no reservation; the two are told apart
	// by zone.
	resOf := func(o engine.PlannedOffering) string {
		if o.CapacityType != cloudprovider.CapacityTypeReserved {
			return o.CapacityType
		}
		return map[string]string{"zone-b": "cr-1", "zone-a": "cr-2"}[o.Zone]
	}
	count := func(plan *engine.Plan) map[string]int {
		out := map[string]int{}
		for _, c := range plan.NodeClaims {
			out[resOf(c.Offering)]++
		}
		return out
	}
	ct := req(labelCT, requirements.In, cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved)

	// Claims beyond a reservation's room keep it when the pool allows no
	// other offering (their launch fails and the next plan sees it full):
	// what matters here is which offerings each pool may use.
	blocks := withBoth(pool("blocks", 10, ct, req(labelResType, requirements.In, "capacity-block")))
	plan := solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{blocks}})
	if got := count(plan); got["cr-2"] != 5 {
		t.Errorf("blocks only: claims %v; want all 5 in the block cr-2", got)
	}

	byID := withBoth(pool("by-id", 10, ct, req(labelResID, requirements.In, "cr-1")))
	plan = solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{byID}})
	if got := count(plan); got["cr-1"] != 5 {
		t.Errorf("reservation cr-1 only: claims %v; want all 5 in cr-1", got)
	}

	noBlocks := withBoth(pool("no-blocks", 10, ct, req(labelResType, requirements.NotIn, "capacity-block")))
	plan = solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{noBlocks}})
	if got := count(plan); got["cr-2"] != 0 || got["cr-1"] != 3 || got[cloudprovider.CapacityTypeOnDemand] != 2 {
		t.Errorf("no blocks: claims %v; want 3 in cr-1, 2 on-demand, none in cr-2", got)
	}

	// Twins but for the requirement: the heavier blocks-only pool, limited
	// to 2 nodes, takes the block's 2; the other pool the default
	// reservation's 3 (as its twin it would have taken the block too).
	a := withBoth(pool("a-blocks", 20, ct, req(labelResType, requirements.In, "capacity-block")))
	a.Limits = corev1.ResourceList{"nodes": resource.MustParse("2")}
	b := pool("b-any", 10, ct)
	b.InstanceTypes = a.InstanceTypes
	plan = solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{a, b}})
	byPool := map[string]int{}
	for _, c := range plan.NodeClaims {
		byPool[c.NodePool+"/"+resOf(c.Offering)]++
	}
	if byPool["a-blocks/cr-2"] != 2 || byPool["b-any/cr-1"] != 3 || len(plan.NodeClaims) != 5 {
		t.Errorf("two pools: claims by pool/reservation %v; want a-blocks/cr-2 2 and b-any/cr-1 3", byPool)
	}
}
