package snapshot_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

func TestPoolMinSavings(t *testing.T) {
	pool := func(ann map[string]string) *karpv1.NodePool {
		return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: ann}}
	}
	// Absent: nil fields (the controller's value).
	ms, err := snapshot.PoolMinSavings(pool(nil))
	if err != nil || ms.PerCommand != nil || ms.PerPod != nil {
		t.Fatalf("no annotations: %+v, %v; want nil fields, no error", ms, err)
	}
	// Both set, "0" included (an explicit 0 overrides a global threshold).
	ms, err = snapshot.PoolMinSavings(pool(map[string]string{
		karpv1.AnnotationConsolidationMinSavings: "0.05", karpv1.AnnotationConsolidationMinSavingsPerPod: "0"}))
	if err != nil || ms.PerCommand == nil || *ms.PerCommand != 0.05 || ms.PerPod == nil || *ms.PerPod != 0 {
		t.Fatalf("0.05 and 0: %+v, %v", ms, err)
	}
	if pp := snapshot.DisruptionPolicy(pool(map[string]string{karpv1.AnnotationConsolidationMinSavings: "0.25"})); pp.MinSavings.PerCommand == nil || *pp.MinSavings.PerCommand != 0.25 {
		t.Fatalf("DisruptionPolicy did not carry the annotation: %+v", pp.MinSavings)
	}
	// Bad values: reported, naming the pool, the annotation and the value;
	// the good one is still read.
	for _, bad := range []string{"abc", "-0.1", "NaN", "+Inf", "$0.05", ""} {
		ms, err = snapshot.PoolMinSavings(pool(map[string]string{
			karpv1.AnnotationConsolidationMinSavings: bad, karpv1.AnnotationConsolidationMinSavingsPerPod: "0.01"}))
		if err == nil {
			t.Fatalf("%q accepted", bad)
		}
		for _, want := range []string{"NodePool web", karpv1.AnnotationConsolidationMinSavings, `"` + bad + `"`, "controller's value"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		if ms.PerCommand != nil || ms.PerPod == nil || *ms.PerPod != 0.01 {
			t.Errorf("%q: %+v; want the bad one nil, the good one read", bad, ms)
		}
		if pp := snapshot.DisruptionPolicy(pool(map[string]string{karpv1.AnnotationConsolidationMinSavings: bad})); pp.MinSavings.PerCommand != nil {
			t.Errorf("DisruptionPolicy used the bad value %q", bad)
		}
	}
}
