package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// A pass reads the cache's own NodeClaims; own swaps one for a copy in
// every index of the state, so that what start writes on it never touches
// the cached object.
func TestStateOwnSwapsInACopy(t *testing.T) {
	cached := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"x": "1"}}}
	other := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	st := &state{
		claims:      []*karpv1.NodeClaim{other, cached},
		claimByName: map[string]*karpv1.NodeClaim{"a": cached, "b": other},
		nodeOfClaim: map[string]*corev1.Node{"a": node},
		claimOfNode: map[string]*karpv1.NodeClaim{"n": cached},
	}
	cp := st.own(cached)
	if cp == cached {
		t.Fatal("own returned the cached object itself")
	}
	cp.Annotations[CommandAnnotationKey] = "{}"
	cp.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, "Underutilized", "m", metav1.Now().Time)
	if _, ok := cached.Annotations[CommandAnnotationKey]; ok || len(cached.Status.Conditions) != 0 {
		t.Errorf("the cached object changed: annotations %v, conditions %v", cached.Annotations, cached.Status.Conditions)
	}
	if st.claimByName["a"] != cp || st.claims[1] != cp || st.claimOfNode["n"] != cp {
		t.Errorf("the state still points at the cached object: byName %v, list %v, ofNode %v",
			st.claimByName["a"] == cp, st.claims[1] == cp, st.claimOfNode["n"] == cp)
	}
	if st.claims[0] != other || st.claimByName["b"] != other {
		t.Error("own replaced another NodeClaim")
	}
}
