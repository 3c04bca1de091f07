package disruption_test

import (
	"strconv"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/commitment"
)

func odPrice(f *fleet, it string) float64 {
	for _, o := range f.types[it].Offerings {
		if o.CapacityType == "on-demand" {
			return o.Price
		}
	}
	return 0
}

func savingsPlan(amount float64) commitment.Spec {
	return commitment.Spec{SavingsPlans: []commitment.SavingsPlan{{Name: "compute", Type: commitment.TypeCompute,
		HourlyCommitment: commitment.Amount(fmtAmount(amount))}}}
}

func fmtAmount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// A mostly idle on-demand node that a Savings Plan covers costs nothing
// at the margin: consolidation does not replace it with spot "to save
// money", while the same node without the plan is replaced.
func TestCoveredOnDemandNodeIsNotReplacedBySpot(t *testing.T) {
	for _, tc := range []struct {
		name        string
		covered     bool
		wantReplace bool
	}{{"no commitment", false, true}, {"covered", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(types(family("m5")), "on-demand", "spot")
			f.node("m5.2xlarge", "on-demand", "500m", "500m")
			if tc.covered {
				// Exactly the node's price: nothing is left to cover a
				// replacement on-demand, so the only cheaper thing is spot.
				f.in.Commitments = savingsPlan(odPrice(f, "m5.2xlarge"))
			}
			plan := compute(t, f.input(open()))
			if got := len(plan.Commands) > 0; got != tc.wantReplace {
				t.Fatalf("commands %+v, kept %+v; want a replacement %v", plan.Commands, plan.Kept, tc.wantReplace)
			}
			if tc.covered && plan.FleetPricePerHour > 1e-3 {
				t.Errorf("fleet of one covered node priced %g/h, want about 0 at the margin", plan.FleetPricePerHour)
			}
			if !tc.covered {
				for _, c := range plan.Commands {
					for _, r := range c.Replacements {
						if r.Offering.CapacityType != "spot" {
							t.Errorf("without a commitment the replacement is %s, want spot", r.Offering.CapacityType)
						}
					}
				}
			}
		})
	}
}

// A spot node's pods move onto on-demand capacity the commitment covers:
// the replacement is covered on-demand and the command saves the spot
// price.
func TestSpotNodeMovesOntoCoveredOnDemand(t *testing.T) {
	f := newFleet(types(family("m5")), "on-demand", "spot")
	f.node("m5.xlarge", "spot", "1", "1")
	f.in.Commitments = savingsPlan(20)
	plan := compute(t, f.input(open()))
	if len(plan.Commands) != 1 || len(plan.Commands[0].Replacements) != 1 {
		t.Fatalf("commands %+v, kept %+v; want the spot node replaced by one covered on-demand node", plan.Commands, plan.Kept)
	}
	r := plan.Commands[0].Replacements[0]
	if r.Offering.CapacityType != "on-demand" || r.Offering.Commitment != "compute" || r.Offering.Price > 1e-3 {
		t.Errorf("replacement %+v, want on-demand covered by compute at about 0", r.Offering)
	}
	if cts := r.Requirements.Get("karpenter.sh/capacity-type"); cts.Has("spot") {
		t.Errorf("replacement allows %s, want on-demand only", cts)
	}
	if plan.Commands[0].SavingsPerHour <= 0 {
		t.Errorf("savings %g, want the spot price", plan.Commands[0].SavingsPerHour)
	}
}
