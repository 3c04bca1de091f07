package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// m5In returns the catalog's m5 types in the given zones of us-east-1.
func m5In(zones ...string) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range catalog.Builtin().InstanceTypes("us-east-1", zones, catalog.KubeletSettings{}) {
		if strings.HasPrefix(it.Name, "m5.") {
			out = append(out, it)
		}
	}
	return out
}

// assertBelowFleet checks that the planner's bound is positive and never
// above the fleet's $/h, before or after the commands.
func assertBelowFleet(t *testing.T, in *disruption.Input) {
	t.Helper()
	plan := compute(t, in)
	lb, err := disruption.LowerBound(in)
	if err != nil {
		t.Fatal(err)
	}
	if lb != plan.LowerBoundPricePerHour {
		t.Fatalf("LowerBound %.6f, Compute's %.6f", lb, plan.LowerBoundPricePerHour)
	}
	if lb <= 0 {
		t.Fatalf("no bound: %.6f", lb)
	}
	if lb > plan.FleetPricePerHour || lb > plan.FleetPricePerHourAfter {
		t.Fatalf("bound $%.4f/h is above the fleet: $%.4f/h now, $%.4f/h after the commands", lb, plan.FleetPricePerHour, plan.FleetPricePerHourAfter)
	}
}

// TestLowerBoundIgnoresPoolWeights: pods on a spot node of the light pool
// are held for less than a fresh plan, which fills the heavy on-demand
// pool first, would pay; the bound covers the fleet as it is.
func TestLowerBoundIgnoresPoolWeights(t *testing.T) {
	f := newFleet(m5In(zone), cloudprovider.CapacityTypeSpot)
	od, _ := requirements.New("karpenter.sh/capacity-type", requirements.In, []string{cloudprovider.CapacityTypeOnDemand}, nil)
	f.in.NodePools = append(f.in.NodePools, engine.NodePool{Name: "heavy", Weight: 50,
		Requirements: requirements.NewRequirements(od), InstanceTypes: f.in.NodePools[0].InstanceTypes})
	f.node("m5.xlarge", cloudprovider.CapacityTypeSpot, "1", "1", "1")
	assertBelowFleet(t, f.input(open()))
}

// TestLowerBoundIgnoresSkewedSpread: three pods under a zone spread of
// maxSkew 1 over three zones, left on one node in one zone (their peers
// in the other zones were deleted). A fresh plan needs a node per zone;
// the fleet holds them on one.
func TestLowerBoundIgnoresSkewedSpread(t *testing.T) {
	f := newFleet(m5In("us-east-1a", "us-east-1b", "us-east-1c"), cloudprovider.CapacityTypeOnDemand)
	f.node("m5.xlarge", cloudprovider.CapacityTypeOnDemand, "1", "1", "1")
	for _, p := range f.in.Nodes[0].Pods {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	assertBelowFleet(t, f.input(open()))
}

// BenchmarkLowerBound is the planner's fleet bound alone on the 1,000-node
// benchmark cluster (about 18,000 pods after the deletions).
func BenchmarkLowerBound(b *testing.B) {
	in := input(benchCluster(b, 1000, false), open())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if v, err := disruption.LowerBound(in); err != nil || v <= 0 {
			b.Fatalf("bound %v, %v", v, err)
		}
	}
}
