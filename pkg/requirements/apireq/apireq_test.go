package apireq_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/requirements/apireq"
)

func ptr[T any](v T) *T { return &v }

func TestConvertKeepsMinValues(t *testing.T) {
	reqs := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5", "r5"}, MinValues: ptr(2)},
		{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"r5"}},
	}
	rs, errs := apireq.Convert(reqs, field.NewPath("spec", "requirements"))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	r := rs.Get("karpenter.k8s.aws/instance-family")
	if r == nil || r.MinValues() == nil || *r.MinValues() != 2 {
		t.Fatalf("minValues lost: %v", r)
	}
	if r.Has("r5") || !r.Has("m5") {
		t.Errorf("the two expressions were not intersected: %v", r)
	}
}

func TestConvertErrorsNamePath(t *testing.T) {
	nc := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "a", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}},
		{Key: "b", Operator: corev1.NodeSelectorOpGt, Values: []string{"nope"}},
	}}}
	_, err := apireq.NodeClaim(nc)
	if err == nil || !strings.Contains(err.Error(), "spec.requirements[1]") {
		t.Fatalf("error %v does not name spec.requirements[1]", err)
	}
}

func TestOrderedValues(t *testing.T) {
	reqs := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"z", "a", "m", "a"}},
		{Key: "k", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"q"}},
		{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"b", "z"}},
	}
	got, ok := apireq.OrderedValues(reqs, "k")
	if !ok || !slices.Equal(got, []string{"z", "a", "m", "b"}) {
		t.Errorf("OrderedValues = %v, %v", got, ok)
	}
	if _, ok := apireq.OrderedValues(reqs, "other"); ok {
		t.Error("a key without In reported found")
	}
}
