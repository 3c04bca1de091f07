package v1

import (
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
// Setting one of ReadyDependents also recomputes Ready. It reports whether
// the conditions changed.
func (in *EC2NodeClass) SetCondition(t string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	changed := conditions.Set(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	}, now)
	for _, d := range ReadyDependents {
		if d == t {
			root := conditions.Root(in.Status.Conditions, ConditionTypeReady, in.Generation, ReadyDependents...)
			changed = conditions.Set(&in.Status.Conditions, root, now) || changed
			break
		}
	}
	return changed
}
