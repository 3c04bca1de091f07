package engine_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// commitmentPods are 5 one-per-node pods that each take an 8-vCPU node;
// the cheapest is cg.8x (on-demand $0.32/h, spot $0.128/h in every
// zone), then c.8x ($0.36/h on-demand).
func commitmentPods() []*corev1.Pod {
	return replicas(5, "w", "6", "8Gi", withLabels("app", "w"), withAnti(corev1.LabelHostname, sel("app", "w")))
}

// countCT counts the plan's claims by capacity type and checks that a
// covered claim is pinned to on-demand, names its commitment and costs
// about nothing, and that an uncovered one names none.
func countCT(t *testing.T, plan *engine.Plan) (covered, spot, od int) {
	t.Helper()
	for _, c := range plan.NodeClaims {
		o := c.Offering
		switch {
		case o.Commitment != "":
			covered++
			if o.CapacityType != cloudprovider.CapacityTypeOnDemand {
				t.Errorf("%s: covered offering %+v is not on-demand", c.Name, o)
			}
			if cts := c.Requirements.Get(labelCT); cts.Has(cloudprovider.CapacityTypeSpot) || !cts.Has(cloudprovider.CapacityTypeOnDemand) {
				t.Errorf("%s: covered claim's capacity types %s, want on-demand only (a launch must not take spot)", c.Name, cts)
			}
			if o.Price > 1e-3 || o.ListPrice < 0.32 {
				t.Errorf("%s: covered offering price %g (list %g), want about 0 at the margin", c.Name, o.Price, o.ListPrice)
			}
		case o.CapacityType == cloudprovider.CapacityTypeSpot:
			spot++
		default:
			od++
		}
	}
	if plan.LowerBound > plan.PricePerHour+1e-9 {
		t.Errorf("lower bound %g above the plan's %g", plan.LowerBound, plan.PricePerHour)
	}
	return covered, spot, od
}

// spotOD is a pool allowed spot and on-demand.
func spotOD() engine.NodePool {
	return pool("default", 0, req(labelCT, "In", cloudprovider.CapacityTypeSpot, cloudprovider.CapacityTypeOnDemand))
}

func compute(amount string) commitment.Spec {
	return commitment.Spec{SavingsPlans: []commitment.SavingsPlan{{Name: "compute", Type: commitment.TypeCompute, HourlyCommitment: commitment.Amount(amount)}}}
}

// The must-show: with a Savings Plan covering the fleet's on-demand need
// the plan is on-demand and costs 0 at the margin; with none, the usual
// (spot) plan; in between, the plan fills the commitment, then spot.
func TestCommitmentCoveringTheNeedPlansOnDemandAtNoMarginalCost(t *testing.T) {
	pods := commitmentPods()
	usual := solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{spotOD()}})
	if cov, spot, od := countCT(t, usual); cov != 0 || spot != 5 || od != 0 {
		t.Fatalf("no commitment: %d covered, %d spot, %d on-demand; want the usual 5 spot", cov, spot, od)
	}
	if usual.PricePerHour < 0.64-1e-9 {
		t.Fatalf("no commitment: plan costs %g, want 5 spot cg.8x (0.64)", usual.PricePerHour)
	}

	full := solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{spotOD()}, Commitments: compute("20")})
	if cov, spot, od := countCT(t, full); cov != 5 || spot != 0 || od != 0 {
		t.Fatalf("$20/h Compute plan: %d covered, %d spot, %d on-demand; want 5 covered on-demand", cov, spot, od)
	}
	if full.PricePerHour > 1e-3 {
		t.Errorf("$20/h Compute plan: plan costs %g at the margin, want 0", full.PricePerHour)
	}

	// $0.80/h covers two $0.32/h nodes whole, not a third.
	part := solveChecked(t, &engine.Input{Pods: pods, NodePools: []engine.NodePool{spotOD()}, Commitments: compute("0.80")})
	if cov, spot, od := countCT(t, part); cov != 2 || spot != 3 || od != 0 {
		t.Fatalf("$0.80/h Compute plan: %d covered, %d spot, %d on-demand; want 2 covered and 3 spot", cov, spot, od)
	}
	if part.PricePerHour > usual.PricePerHour*3/5+1e-3 {
		t.Errorf("$0.80/h Compute plan costs %g, want at most the 3 spot nodes (%g)", part.PricePerHour, usual.PricePerHour*3/5)
	}

	// An existing on-demand node uses the plan first: $0.80 - $0.36 leaves
	// $0.44/h, which covers one.
	ex := existingNode("od-1", "zone-a", "1", "1Gi", map[string]string{labelCT: cloudprovider.CapacityTypeOnDemand, corev1.LabelInstanceTypeStable: "c.8x"})
	in := &engine.Input{Pods: pods, NodePools: []engine.NodePool{spotOD()}, Commitments: compute("0.80"),
		Nodes: []engine.ExistingNode{{Node: ex, PricePerHour: 0.36}}}
	withNode := solveChecked(t, in)
	if cov, spot, _ := countCT(t, withNode); cov != 1 || spot != 4 {
		t.Errorf("$0.80/h with a $0.36/h on-demand node running: %d covered and %d spot, want 1 and 4", cov, spot)
	}
	if _, nodes := engine.CommitmentLedger(in); !nodes["od-1"].Full || nodes["od-1"].Commitment != "compute" {
		t.Errorf("the existing on-demand node's coverage %+v, want whole by compute", nodes["od-1"])
	}
}

// Reserved Instances cover their type (and zone) only, by count: the
// covered claims keep only that type and land in the zone.
func TestReservedInstancesCoverTheirTypeAndZone(t *testing.T) {
	spec := commitment.Spec{ReservedInstances: []commitment.ReservedInstance{{Name: "ri", InstanceType: "c.8x", Zone: "zone-b", Count: 3}}}
	plan := solveChecked(t, &engine.Input{Pods: commitmentPods(), NodePools: []engine.NodePool{spotOD()}, Commitments: spec})
	cov, spot, od := countCT(t, plan)
	if cov != 3 || spot != 2 || od != 0 {
		t.Fatalf("3 c.8x RIs in zone-b: %d covered, %d spot, %d on-demand; want 3 covered, 2 spot", cov, spot, od)
	}
	for _, c := range plan.NodeClaims {
		if c.Offering.Commitment == "" {
			continue
		}
		if strings.Join(c.InstanceTypeOptions, ",") != "c.8x" || c.Offering.Zone != "zone-b" {
			t.Errorf("%s: covered by the RI but options %v in %s, want only c.8x in zone-b", c.Name, c.InstanceTypeOptions, c.Offering.Zone)
		}
		if z := c.Requirements.Get(corev1.LabelTopologyZone); !z.Has("zone-b") || z.Has("zone-a") {
			t.Errorf("%s: zone requirement %s, want zone-b only", c.Name, z)
		}
	}
}

// A pool allowed only on-demand pays the list price once the commitment
// is used up.
func TestCommitmentUsedUpOnDemandOnlyPaysListPrice(t *testing.T) {
	p := pool("od", 0, req(labelCT, "In", cloudprovider.CapacityTypeOnDemand))
	plan := solveChecked(t, &engine.Input{Pods: commitmentPods(), NodePools: []engine.NodePool{p}, Commitments: compute("0.40")})
	cov, _, od := countCT(t, plan)
	if cov != 1 || od != 4 {
		t.Fatalf("$0.40/h, on-demand only: %d covered, %d on-demand at list; want 1 and 4", cov, od)
	}
	if plan.PricePerHour < 4*0.32-1e-6 || plan.PricePerHour > 4*0.32+1e-3 {
		t.Errorf("plan costs %g, want 4 list-priced nodes (%g) and one covered", plan.PricePerHour, 4*0.32)
	}
}
