package cost_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/clusterinput"
	"github.com/dovetail-sh/dovetail/internal/cli/cost"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

func costNode(name, ct, typ string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		karpv1.NodePoolLabelKey: "general", karpv1.CapacityTypeLabelKey: ct,
		corev1.LabelInstanceTypeStable: typ, corev1.LabelTopologyZone: "us-east-1a"}}}
}

// cost splits on-demand $/h into what commitments cover and what they
// do not: a Compute plan of 1.5 m6i.large covers the first m6i.large
// whole and half of the second; the spot node is never covered.
func TestCostShowsCoveredAndUncoveredSpend(t *testing.T) {
	cat := catalog.Builtin()
	od, _ := cat.OnDemandPrice("us-east-1", "m6i.large")
	if od <= 0 {
		t.Fatal("no m6i.large price")
	}
	plan := 1.5 * od
	cl := &snapshot.Cluster{NodePools: []*karpv1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "general"}}},
		Nodes:       []*corev1.Node{costNode("a", "on-demand", "m6i.large"), costNode("b", "on-demand", "m6i.large"), costNode("c", "spot", "m6i.large")},
		Commitments: commitment.Spec{SavingsPlans: []commitment.SavingsPlan{{Name: "compute-1y", Type: commitment.TypeCompute, HourlyCommitment: commitment.Amount(strconv.FormatFloat(plan, 'f', -1, 64))}}}}
	rep := cost.Build(&clusterinput.Input{Cluster: cl, Catalog: cat, Region: "us-east-1"}, nil, cost.RecordInfo{}, "", time.Hour, time.Now())
	if !near(rep.Total.CoveredPerHour, plan) {
		t.Errorf("covered $%v/h, want the whole $%v/h plan", rep.Total.CoveredPerHour, plan)
	}
	if !near(rep.Total.OnDemandUncoveredPerHour, od/2) {
		t.Errorf("uncovered on-demand $%v/h, want half a node, $%v/h", rep.Total.OnDemandUncoveredPerHour, od/2)
	}
	if len(rep.Commitments) != 1 || rep.Commitments[0].Name != "compute-1y" || rep.Commitments[0].Nodes != 2 {
		t.Errorf("commitments %+v, want compute-1y on 2 nodes", rep.Commitments)
	}
	var buf bytes.Buffer
	cost.WriteText(&buf, rep, true)
	if !strings.Contains(buf.String(), fmt.Sprintf("Commitments: $%.4f/hour of on-demand covered (compute-1y", rep.Total.CoveredPerHour)) {
		t.Errorf("text output does not show the covered spend:\n%s", buf.String())
	}

	// Without commitments nothing is covered.
	cl.Commitments = commitment.Spec{}
	rep = cost.Build(&clusterinput.Input{Cluster: cl, Catalog: cat, Region: "us-east-1"}, nil, cost.RecordInfo{}, "", time.Hour, time.Now())
	if rep.Total.CoveredPerHour != 0 || !near(rep.Total.OnDemandUncoveredPerHour, 2*od) || len(rep.Commitments) != 0 {
		t.Errorf("no commitments: covered %v, uncovered %v, %+v; want 0, all on-demand, none", rep.Total.CoveredPerHour, rep.Total.OnDemandUncoveredPerHour, rep.Commitments)
	}
}

// A node of an offering a NodeOverlay priced is shown at the adjusted
// price, naming the overlay.
func TestCostShowsOverlayAdjustedPrice(t *testing.T) {
	cat := catalog.Builtin()
	od, _ := cat.OnDemandPrice("us-east-1", "m6i.large")
	cl := &snapshot.Cluster{NodePools: []*karpv1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "general"}}},
		Nodes: []*corev1.Node{costNode("a", "on-demand", "m6i.large")}}
	it := &cloudprovider.InstanceType{Name: "m6i.large", Offerings: cloudprovider.Offerings{
		{Zone: "us-east-1a", CapacityType: "on-demand", Price: od / 2, Available: true, PriceOverlay: "half"}}}
	in := &clusterinput.Input{Cluster: cl, Catalog: cat, Region: "us-east-1",
		Engine: &engine.Input{NodePools: []engine.NodePool{{Name: "general", InstanceTypes: []*cloudprovider.InstanceType{it}}}}}
	rep := cost.Build(in, nil, cost.RecordInfo{}, "", time.Hour, time.Now())
	if !near(rep.Total.PricePerHour, od/2) {
		t.Errorf("fleet $%v/h, want the overlay's $%v/h", rep.Total.PricePerHour, od/2)
	}
	if len(rep.Overlaid) != 1 || rep.Overlaid[0].Overlay != "half" {
		t.Errorf("overlaid %+v, want node a by half", rep.Overlaid)
	}
}
