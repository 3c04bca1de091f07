package snapshot_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// TestNodeClaimsByNode is issue 34 item 5's rule for readers: a node's
// claim is the one with its providerID; a claim whose status names another
// claim's node (and a garbage providerID) matches nothing, so no node is
// priced from another claim.
func TestNodeClaimsByNode(t *testing.T) {
	node := func(name, pid string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: pid}}
	}
	claim := func(name, nodeName, pid string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Status.NodeName, nc.Status.ProviderID = nodeName, pid
		return nc
	}
	a := node("node-a", "aws:///us-east-1a/i-aaa")
	b := node("node-b", "aws:///us-east-1a/i-bbb")
	c := node("node-c", "") // no providerID yet
	good := claim("good", "node-a", "aws:///us-east-1a/i-aaa")
	liar := claim("liar", "node-a", "aws:///us-east-1a/i-../../../x\x1b[2J")
	byPID := claim("by-pid", "", "aws:///us-east-1a/i-bbb")
	byName := claim("by-name", "node-c", "")
	got := snapshot.NodeClaimsByNode([]*corev1.Node{a, b, c}, []*karpv1.NodeClaim{liar, good, byPID, byName})
	want := map[string]string{"node-a": "good", "node-b": "by-pid", "node-c": "by-name"}
	if len(got) != len(want) {
		t.Errorf("got %d matches, want %d", len(got), len(want))
	}
	for n, w := range want {
		if got[n] == nil || got[n].Name != w {
			t.Errorf("%s -> %v, want %s", n, got[n], w)
		}
	}
	// Only the liar names node-a: it still does not match, its providerID
	// contradicts the node's.
	got = snapshot.NodeClaimsByNode([]*corev1.Node{a}, []*karpv1.NodeClaim{liar})
	if got["node-a"] != nil {
		t.Errorf("node-a matched %s, whose providerID is another's", got["node-a"].Name)
	}
	// Two claims naming one node without providerIDs: ambiguous, none.
	got = snapshot.NodeClaimsByNode([]*corev1.Node{c}, []*karpv1.NodeClaim{claim("x", "node-c", ""), claim("y", "node-c", "")})
	if got["node-c"] != nil {
		t.Errorf("node-c matched %s of two claims naming it", got["node-c"].Name)
	}
}
