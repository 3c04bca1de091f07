package v1

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/api/internal/conditions"
)

// AMIFamily returns the AMI family of the class: the family of its first
// alias term when there is one (aliases are exclusive with other terms), else
// spec.amiFamily, else "" (which validation refuses).
func (in *EC2NodeClass) AMIFamily() string {
	for _, t := range in.Spec.AMISelectorTerms {
		if t.Alias != "" {
			return FamilyFromAlias(t.Alias)
		}
	}
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	return ""
}

// Alias returns the first alias AMI selector term, or "".
func (in *EC2NodeClass) Alias() string {
	for _, t := range in.Spec.AMISelectorTerms {
		if t.Alias != "" {
			return t.Alias
		}
	}
	return ""
}

// FamilyFromAlias maps an alias ("al2023@latest") to its amiFamily
// ("AL2023"); it returns "" for an unknown family.
func FamilyFromAlias(alias string) string {
	family, _, _ := strings.Cut(alias, "@")
	return aliasFamilies[strings.ToLower(family)]
}

// AliasVersion returns the version part of an alias ("latest" for
// "al2023@latest"), or "" when there is none.
func AliasVersion(alias string) string {
	_, version, _ := strings.Cut(alias, "@")
	return version
}

// GetCondition returns the condition of type t, or nil.
func (in *EC2NodeClass) GetCondition(t string) *metav1.Condition {
	return conditions.Get(in.Status.Conditions, t)
}

// IsTrue reports whether the condition of type t is present and True.
func (in *EC2NodeClass) IsTrue(t string) bool { return conditions.IsTrue(in.Status.Conditions, t) }

// SetCondition sets the condition of type t, stamped with the object's
// generation; lastTransitionTime becomes now only when the status changes.
// Setting one of ReadyDependentsOf(in) also recomputes Ready. It reports
// whether the conditions changed.
func (in *EC2NodeClass) SetCondition(t string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	changed := conditions.Set(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	}, now)
	deps := ReadyDependentsOf(in)
	if slices.Contains(deps, t) {
		root := conditions.Root(in.Status.Conditions, ConditionTypeReady, in.Generation, deps...)
		changed = conditions.Set(&in.Status.Conditions, root, now) || changed
	}
	return changed
}

// DeleteCondition removes the condition of type t (PlacementGroupReady
// once the class no longer selects a group) and recomputes Ready. It
// reports whether the conditions changed.
func (in *EC2NodeClass) DeleteCondition(t string, now time.Time) bool {
	if !conditions.Delete(&in.Status.Conditions, t) {
		return false
	}
	if conditions.Get(in.Status.Conditions, ConditionTypeReady) != nil {
		root := conditions.Root(in.Status.Conditions, ConditionTypeReady, in.Generation, ReadyDependentsOf(in)...)
		conditions.Set(&in.Status.Conditions, root, now)
	}
	return true
}

// ReadyDependentsOf are the conditions that together make the class
// Ready: ReadyDependents, and PlacementGroupReady while the class sets
// spec.placementGroupSelector.
func ReadyDependentsOf(in *EC2NodeClass) []string {
	if in.Spec.PlacementGroupSelector == nil {
		return ReadyDependents
	}
	return append(slices.Clip(ReadyDependents), ConditionTypePlacementGroupReady)
}
