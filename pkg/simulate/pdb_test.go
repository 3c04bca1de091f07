package simulate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

func boundPod(ns, name, node string, l map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}, Spec: corev1.PodSpec{NodeName: node}}
}

func TestPDBAllowance(t *testing.T) {
	web := map[string]string{"app": "web"}
	// 5 bound web pods in shop, one pending, one finished, one in another
	// namespace, one of another app.
	pods := []*corev1.Pod{
		boundPod("shop", "w1", "n1", web), boundPod("shop", "w2", "n1", web), boundPod("shop", "w3", "n2", web),
		boundPod("shop", "w4", "n2", web), boundPod("shop", "w5", "n3", web),
		boundPod("shop", "pending", "", web),
		func() *corev1.Pod {
			p := boundPod("shop", "done", "n1", web)
			p.Status.Phase = corev1.PodSucceeded
			return p
		}(),
		boundPod("other", "w1", "n1", web),
		boundPod("shop", "db", "n1", map[string]string{"app": "db"}),
	}
	is := intstr.FromInt32
	str := intstr.FromString
	tests := []struct {
		name     string
		min, max *intstr.IntOrString
		selector *metav1.LabelSelector
		want     int32
	}{
		{name: "minAvailable count", min: ptr(is(3)), want: 2},
		{name: "minAvailable above the pods", min: ptr(is(9)), want: 0},
		{name: "minAvailable percent rounds up", min: ptr(str("50%")), want: 2}, // ceil(2.5) = 3 must stay
		{name: "minAvailable 100%", min: ptr(str("100%")), want: 0},
		{name: "maxUnavailable count", max: ptr(is(1)), want: 1},
		{name: "maxUnavailable above the pods", max: ptr(is(7)), want: 5},
		{name: "maxUnavailable percent rounds up", max: ptr(str("30%")), want: 2}, // ceil(1.5) = 2
		{name: "maxUnavailable 0%", max: ptr(str("0%")), want: 0},
		{name: "neither", want: 5},
		{name: "empty selector covers the namespace", min: ptr(is(1)), selector: &metav1.LabelSelector{}, want: 5},
		{name: "expression selector", max: ptr(is(10)), selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}, want: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"}}
			pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = tc.min, tc.max
			pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: web}
			if tc.selector != nil {
				pdb.Spec.Selector = tc.selector
			}
			if got := simulate.PDBAllowance(pdb, pods); got != tc.want {
				t.Errorf("allowance = %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("nil selector covers nothing", func(t *testing.T) {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"}}
		if got := simulate.PDBAllowance(pdb, pods); got != 0 {
			t.Errorf("allowance = %d, want 0", got)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestReadPDB: the kind is read, status.disruptionsAllowed wins when the
// document states it (0 included), and is computed otherwise.
func TestReadPDB(t *testing.T) {
	doc := func(name, spec, status string) string {
		return fmt.Sprintf("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: %s, namespace: shop}\nspec: %s\n%s", name, spec, status)
	}
	pods := `---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: shop, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c}]}
`
	in := doc("stated-zero", "{minAvailable: 0, selector: {matchLabels: {app: web}}}", "status: {disruptionsAllowed: 0}") + "\n---\n" +
		doc("stated", "{maxUnavailable: 1, selector: {matchLabels: {app: web}}}", "status: {disruptionsAllowed: 7}") + "\n---\n" +
		doc("computed", "{minAvailable: 1, selector: {matchLabels: {app: web}}}", "") + "\n" + pods
	m := &simulate.Manifests{}
	if err := m.Read("cluster.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	if len(m.PodDisruptionBudgets) != 3 {
		t.Fatalf("read %d PDBs, want 3", len(m.PodDisruptionBudgets))
	}
	got := map[string]int32{}
	for _, p := range m.PDBs(m.Pods) {
		got[p.Namespace+"/"+p.Name] = p.DisruptionsAllowed
		if !p.Selector.Matches(labels.Set{"app": "web"}) || p.Selector.Matches(labels.Set{"app": "db"}) {
			t.Errorf("PDB %s selector %v", p.Name, p.Selector)
		}
	}
	want := map[string]int32{"shop/stated-zero": 0, "shop/stated": 7, "shop/computed": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("allowances = %v, want %v", got, want)
	}
}

func TestReadPDBErrors(t *testing.T) {
	tests := []struct {
		name, spec, status, want string
	}{
		{name: "both", spec: "{minAvailable: 1, maxUnavailable: 1, selector: {}}", want: "spec: Invalid value"},
		{name: "bad percent", spec: "{minAvailable: 150%, selector: {}}", want: "spec.minAvailable"},
		{name: "not a percent", spec: "{maxUnavailable: half, selector: {}}", want: "spec.maxUnavailable"},
		{name: "negative", spec: "{maxUnavailable: -1, selector: {}}", want: "spec.maxUnavailable"},
		{name: "bad selector", spec: "{selector: {matchExpressions: [{key: a, operator: Sometimes}]}}", want: "spec.selector"},
		{name: "negative allowance", spec: "{selector: {}}", status: "status: {disruptionsAllowed: -2}", want: "status.disruptionsAllowed"},
		{name: "unknown field", spec: "{selector: {}, minAvaliable: 1}", want: "spec.minAvaliable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b, namespace: shop}\nspec: " + tc.spec + "\n" + tc.status + "\n"
			err := (&simulate.Manifests{}).Read("c.yaml", []byte(in))
			var ies simulate.InputErrors
			if !errors.As(err, &ies) || !errors.Is(err, simulate.ErrBadInput) {
				t.Fatalf("err = %v, want InputErrors", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, `c.yaml:4 (document 2, PodDisruptionBudget "b")`) {
				t.Errorf("err = %q, want the file, document, object and %q", msg, tc.want)
			}
		})
	}
}
