package v1

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeValidate checks what the CRD schema cannot afford to: the syntax of
// template label keys and values and of taint keys and values (CEL's cost
// budget refuses regular expressions over unbounded map keys and the
// strings of corev1.Taint). Everything else is enforced by the apiserver.
// A controller reports the result in the ValidationSucceeded condition. The
// errors carry field paths rooted at "spec".
func (in *NodePool) RuntimeValidate() field.ErrorList {
	spec := field.NewPath("spec", "template")
	var errs field.ErrorList
	errs = append(errs, validateLabels(in.Spec.Template.Labels, spec.Child("metadata", "labels"))...)
	errs = append(errs, validateTaints(in.Spec.Template.Spec.Taints, spec.Child("spec", "taints"))...)
	errs = append(errs, validateTaints(in.Spec.Template.Spec.StartupTaints, spec.Child("spec", "startupTaints"))...)
	if in.Spec.Replicas != nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "replicas"),
			"static NodePools are not supported by dovetail: this pool gets no nodes; remove spec.replicas (on a copy of the pool: it cannot be removed in place) to provision for pending pods"))
	}
	return errs
}

// RuntimeValidate checks the syntax of the NodeClaim's taints (see
// NodePool.RuntimeValidate).
func (in *NodeClaim) RuntimeValidate() field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateTaints(in.Spec.Taints, spec.Child("taints"))...)
	errs = append(errs, validateTaints(in.Spec.StartupTaints, spec.Child("startupTaints"))...)
	return errs
}

func validateLabels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(labels) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Key(k), k, "label key: "+strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(labels[k]); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Key(k), labels[k], "label value: "+strings.Join(msgs, "; ")))
		}
	}
	return errs
}

func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range taints {
		p := path.Index(i)
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, "; ")))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	// Map order is random; sort for stable error lists.
	return slices.Sorted(maps.Keys(m))
}
