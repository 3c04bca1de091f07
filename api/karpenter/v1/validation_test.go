package v1_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

func TestNodePoolRuntimeValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*karpv1.NodePool)
		want   []string // field paths of the expected errors, in order
	}{
		{name: "valid", mutate: func(*karpv1.NodePool) {}},
		{name: "bad label key", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Labels = map[string]string{"bad key": "v"}
		}, want: []string{"spec.template.metadata.labels[bad key]"}},
		{name: "bad label value", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Labels = map[string]string{"team": "has space"}
		}, want: []string{"spec.template.metadata.labels[team]"}},
		{name: "label value too long", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Labels = map[string]string{"team": strings.Repeat("a", 64)}
		}, want: []string{"spec.template.metadata.labels[team]"}},
		{name: "errors sorted by key", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Labels = map[string]string{"z z": "v", "a a": "v", "m": "ok"}
		}, want: []string{"spec.template.metadata.labels[a a]", "spec.template.metadata.labels[z z]"}},
		{name: "bad taint key", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "a/b/c", Effect: corev1.TaintEffectNoSchedule}}
		}, want: []string{"spec.template.spec.taints[0].key"}},
		{name: "bad startup taint value", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "ok", Value: "no!", Effect: corev1.TaintEffectNoSchedule}}
		}, want: []string{"spec.template.spec.startupTaints[0].value"}},
		{name: "bad taint effect", mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "ok", Effect: "Sometimes"}}
		}, want: []string{"spec.template.spec.taints[0].effect"}},
		{name: "static pool: valid (the StaticCapacity gate is the controller's)", mutate: func(np *karpv1.NodePool) {
			n := int64(3)
			np.Spec.Replicas = &n
		}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
				ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{"team": "b"}},
				Spec: karpv1.NodeClaimTemplateSpec{
					Taints: []corev1.Taint{{Key: "example.com/team", Value: "b", Effect: corev1.TaintEffectNoSchedule}},
				},
			}}}
			tt.mutate(np)
			assertFields(t, np.RuntimeValidate(), tt.want)
		})
	}
}

func TestNodeClaimRuntimeValidate(t *testing.T) {
	nc := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{
		Taints:        []corev1.Taint{{Key: "ok", Effect: corev1.TaintEffectNoExecute}},
		StartupTaints: []corev1.Taint{{Key: "", Effect: corev1.TaintEffectNoSchedule}},
	}}
	assertFields(t, nc.RuntimeValidate(), []string{"spec.startupTaints[0].key"})
}

func assertFields(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("error fields = %q, want %q (errors: %v)", got, want, errs.ToAggregate())
	}
}
