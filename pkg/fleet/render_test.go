package fleet_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/testutil/hostile"
	"github.com/dovetail-sh/dovetail/pkg/fleet"
)

// TestTableEscapesEveryString is issue 34 item 2 for `top`: node, pool,
// instance type, capacity type and zone are escaped; only the screen's own
// sequences (clear, bold) are written raw, and only on a terminal.
func TestTableEscapesEveryString(t *testing.T) {
	var row fleet.Node
	hostile.Fill(&row, hostile.Name)
	out := fleet.Table([]fleet.Node{row}, time.Unix(0, 0), 0, false)
	if n := hostile.ControlBytes(out); n != 0 {
		t.Fatalf("table holds %d control bytes:\n%q", n, out)
	}
	if !strings.Contains(out, `evil\x1b]0;pwned`) {
		t.Fatalf("table does not show the escaped name:\n%s", out)
	}
}

// TestBuildNeverPricesANodeFromAnotherClaim is issue 34 item 5 for `top`: a
// NodeClaim whose status names another claim's node (with a garbage
// providerID) does not lend that node its price; the node keeps its own
// claim's.
func TestBuildNeverPricesANodeFromAnotherClaim(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{karpv1.NodePoolLabelKey: "p", corev1.LabelInstanceTypeStable: "m5.large"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-aaa"}}
	own := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "own", Annotations: map[string]string{karpv1.AnnotationPricePerHour: "0.096"}}}
	own.Status.NodeName, own.Status.ProviderID = "node-a", "aws:///us-east-1a/i-aaa"
	liar := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "liar", Annotations: map[string]string{karpv1.AnnotationPricePerHour: "9.5"}}}
	liar.Status.NodeName, liar.Status.ProviderID = "node-a", "aws:///us-east-1a/i-../../../x\x1b[2J"
	for _, claims := range [][]*karpv1.NodeClaim{{own, liar}, {liar, own}, {liar}} {
		rows := fleet.Build(fleet.Input{Nodes: []*corev1.Node{n}, NodeClaims: claims})
		for _, r := range rows {
			if r.Name == "node-a" && (r.NodeClaim == "liar" || r.PricePerHour == 9.5) {
				t.Errorf("claims %d: node-a priced from the liar: %+v", len(claims), r)
			}
		}
	}
}
