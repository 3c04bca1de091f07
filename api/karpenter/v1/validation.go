package v1

import (
	"maps"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeValidate checks what the CRD schema leaves to run time: the syntax
// of template label keys (CEL's cost budget refuses regular expressions
// over unbounded map keys), and what the peer's CRD accepts but the peer
// refuses at run time, so that both admit the same manifests: taint and
// requirement keys as qualified names (63-character name part),
// requirement values as label values, budget schedules as cron
// expressions. A controller reports the result in the ValidationSucceeded
// condition. The errors carry field paths rooted at "spec".
func (in *NodePool) RuntimeValidate() field.ErrorList {
	spec := field.NewPath("spec", "template")
	var errs field.ErrorList
	errs = append(errs, validateLabels(in.Spec.Template.Labels, spec.Child("metadata", "labels"))...)
	errs = append(errs, validateRequirements(in.Spec.Template.Spec.Requirements, spec.Child("spec", "requirements"))...)
	for i, b := range in.Spec.Disruption.Budgets {
		if b.Schedule == nil {
			continue
		}
		if _, err := cron.ParseStandard(*b.Schedule); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "disruption", "budgets").Index(i).Child("schedule"), *b.Schedule,
				"not a cron expression (minute hour day-of-month month day-of-week, or @yearly, @monthly, @weekly, @daily, @hourly): "+err.Error()))
		}
	}
	errs = append(errs, validateTaints(in.Spec.Template.Spec.Taints, spec.Child("spec", "taints"))...)
	errs = append(errs, validateTaints(in.Spec.Template.Spec.StartupTaints, spec.Child("spec", "startupTaints"))...)
	return errs
}

// RuntimeValidate checks the syntax of the NodeClaim's taints and
// requirements (see NodePool.RuntimeValidate).
func (in *NodeClaim) RuntimeValidate() field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateRequirements(in.Spec.Requirements, spec.Child("requirements"))...)
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

// validateRequirements checks keys as qualified names and values as label
// values (the peer's run-time checks; its CRD leaves them through).
func validateRequirements(reqs []NodeSelectorRequirementWithMinValues, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range reqs {
		p := path.Index(i)
		if msgs := validation.IsQualifiedName(r.Key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, strings.Join(msgs, "; ")))
		}
		for j, v := range r.Values {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("values").Index(j), v, "label value: "+strings.Join(msgs, "; ")))
			}
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
