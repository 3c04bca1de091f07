package requirements

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"pgregory.net/rapid"
)

// TestPropertyAgreesWithKubernetes differentially checks FromNodeSelectorTerm
// + Matches against the scheduler's own node-affinity matcher on the shared
// domain: Kubernetes' operators, matchFields on metadata.name, and values
// that may be invalid label values (both must reject those). Deliberate
// differences are kept out of the generator and documented in doc.go:
// Gte/Lte (a Karpenter extension), NotIn without values (we accept it as
// "unconstrained") and negative Gt/Lt bounds (Kubernetes rejects "-3" as a
// label value; we read it as the integer it is).
func TestPropertyAgreesWithKubernetes(t *testing.T) {
	k8sOps := []Operator{In, NotIn, Exists, DoesNotExist, Gt, Lt}
	values := append(slices.Clone(genValues), "-bad", "Ünïcode")
	rapid.Check(t, func(t *rapid.T) {
		var term corev1.NodeSelectorTerm
		for i := range rapid.IntRange(1, 3).Draw(t, "n") {
			e := corev1.NodeSelectorRequirement{
				Key:      rapid.SampledFrom(append(slices.Clone(genKeys), "bad key")).Draw(t, fmt.Sprintf("key%d", i)),
				Operator: corev1.NodeSelectorOperator(rapid.SampledFrom(k8sOps).Draw(t, fmt.Sprintf("op%d", i))),
			}
			switch Operator(e.Operator) {
			case In, NotIn:
				e.Values = rapid.SliceOfN(rapid.SampledFrom(values), 1, 3).Draw(t, fmt.Sprintf("vals%d", i))
			case Gt, Lt:
				e.Values = []string{strconv.Itoa(rapid.IntRange(0, 14).Draw(t, fmt.Sprintf("bound%d", i)))}
			}
			term.MatchExpressions = append(term.MatchExpressions, e)
		}
		if rapid.Bool().Draw(t, "field?") {
			term.MatchFields = []corev1.NodeSelectorRequirement{{
				Key:      "metadata.name",
				Operator: corev1.NodeSelectorOperator(rapid.SampledFrom([]Operator{In, NotIn}).Draw(t, "fieldOp")),
				Values:   []string{rapid.SampledFrom([]string{"node-a", "node-b"}).Draw(t, "fieldValue")},
			}}
		}
		labels := map[string]string{}
		for _, key := range genKeys {
			if rapid.Bool().Draw(t, key+"?") {
				labels[key] = rapid.SampledFrom(checkUniverse).Draw(t, key)
			}
		}
		name := rapid.SampledFrom([]string{"node-a", "node-b"}).Draw(t, "name")

		ns, k8sErr := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}})
		rs, err := FromNodeSelectorTerm(term)
		if (err == nil) != (k8sErr == nil) {
			t.Fatalf("term %+v: our error %v, Kubernetes error %v", term, err, k8sErr)
		}
		if err != nil {
			return
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		withName := map[string]string{NodeNameKey: name}
		for k, v := range labels {
			withName[k] = v
		}
		want := ns.Match(node)
		if got := rs.Matches(withName); (got == nil) != want {
			t.Fatalf("term %+v, node %s %v: Matches = %v, Kubernetes %v", term, name, labels, got, want)
		}
	})
}
