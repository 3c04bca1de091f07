package cost_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/clusterinput"
	"github.com/dovetail-sh/dovetail/internal/cli/cost"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// cost attributes a node's $/h to the NodePool of its karpenter.sh/nodepool
// label, so a static pool's nodes (and the nodes that hold a buffer's room,
// which are their pool's) are under their pool: 2 on-demand c6i.large of
// static pool "fixed", 1 m6i.large of "general".
func TestCostAttributesStaticPoolNodes(t *testing.T) {
	replicas := int64(2)
	fixed := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}
	fixed.Spec.Replicas = &replicas
	general := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	node := func(name, pool, typ string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			karpv1.NodePoolLabelKey: pool, karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand,
			corev1.LabelInstanceTypeStable: typ, corev1.LabelTopologyZone: "us-east-1a"}}}
	}
	cl := &snapshot.Cluster{NodePools: []*karpv1.NodePool{fixed, general},
		Nodes: []*corev1.Node{node("s1", "fixed", "c6i.large"), node("s2", "fixed", "c6i.large"), node("g1", "general", "m6i.large")}}
	cat := catalog.Builtin()
	rep := cost.Build(&clusterinput.Input{Cluster: cl, Catalog: cat, Region: "us-east-1"}, nil, cost.RecordInfo{}, "", time.Hour, time.Now())
	c6i, _ := cat.OnDemandPrice("us-east-1", "c6i.large")
	m6i, _ := cat.OnDemandPrice("us-east-1", "m6i.large")
	got := map[string]cost.Group{}
	for _, g := range rep.Groups {
		got[g.Name] = g
	}
	if g := got["fixed"]; g.Nodes != 2 || !near(g.PricePerHour, 2*c6i) || c6i == 0 {
		t.Errorf("static pool fixed: %+v, want 2 nodes at $%v/h", g, 2*c6i)
	}
	if g := got["general"]; g.Nodes != 1 || !near(g.PricePerHour, m6i) || m6i == 0 {
		t.Errorf("pool general: %+v, want 1 node at $%v/h", g, m6i)
	}
	if len(rep.Groups) != 2 {
		t.Errorf("groups %+v, want fixed and general", rep.Groups)
	}
}
