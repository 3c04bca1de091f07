package hash_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/hash"
)

func pool() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
			ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: karpv1.NodeClaimTemplateSpec{
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"arm64"}}},
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Taints:       []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Value: "x", Effect: corev1.TaintEffectNoExecute}},
				ExpireAfter:  karpv1.MustParseNillableDuration("720h"),
			},
		}},
	}
}

// TestHashChangesExactlyWithTheCoveredFields edits one field at a time and
// checks whether the hash moves, against the list in the package doc.
func TestHashChangesExactlyWithTheCoveredFields(t *testing.T) {
	base := hash.Hash(pool())
	tests := []struct {
		name    string
		edit    func(*karpv1.NodePool)
		changes bool
	}{
		{"label value", func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "b" }, true},
		{"new annotation", func(np *karpv1.NodePool) { np.Spec.Template.Annotations = map[string]string{"x": "y"} }, true},
		{"taint effect", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[0].Effect = corev1.TaintEffectNoExecute }, true},
		{"startup taint", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"node class name", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, true},
		{"expireAfter", func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("24h") }, true},
		{"expireAfter Never", func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.NeverDuration() }, true},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}, true},
		{"taint order", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}, false},
		{"taint timeAdded", func(np *karpv1.NodePool) { now := metav1.Now(); np.Spec.Template.Spec.Taints[0].TimeAdded = &now }, false},
		{"expireAfter respelled", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("719h60m")
		}, false},
		{"requirements", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{"amd64"} }, false},
		{"weight", func(np *karpv1.NodePool) { w := int32(50); np.Spec.Weight = &w }, false},
		{"limits", func(np *karpv1.NodePool) {
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
		}, false},
		{"pool annotations", func(np *karpv1.NodePool) { np.Annotations = map[string]string{"x": "y"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := pool()
			tt.edit(np)
			got := hash.Hash(np)
			if (got != base) != tt.changes {
				t.Fatalf("hash changed = %v, want %v (%s vs %s)", got != base, tt.changes, got, base)
			}
		})
	}
}

func TestHashDoesNotModifyItsInput(t *testing.T) {
	np := pool()
	before := np.DeepCopy()
	_ = hash.Hash(np)
	if np.Spec.Template.Spec.Taints[0].Key != before.Spec.Template.Spec.Taints[0].Key {
		t.Fatal("Hash reordered the caller's taints")
	}
}
