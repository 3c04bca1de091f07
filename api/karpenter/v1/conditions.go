package v1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/api/internal/conditions"
)

// NodeClaimReadyDependents are the conditions that together make a
// NodeClaim Ready.
var NodeClaimReadyDependents = []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}

// NodePoolReadyDependents are the conditions that together make a NodePool
// Ready.
var NodePoolReadyDependents = []string{ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady}

// GetCondition returns the condition of type t, or nil.
func (in *NodeClaim) GetCondition(t string) *metav1.Condition {
	return conditions.Get(in.Status.Conditions, t)
}

// IsTrue reports whether the condition of type t is present and True.
func (in *NodeClaim) IsTrue(t string) bool { return conditions.IsTrue(in.Status.Conditions, t) }

// SetCondition sets the condition of type t, stamped with the object's
// generation. lastTransitionTime becomes now only when the status changes.
// Setting Launched, Registered or Initialized also recomputes Ready. It
// reports whether the conditions changed.
func (in *NodeClaim) SetCondition(t string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	return setWithRoot(&in.Status.Conditions, in.Generation, t, status, reason, message, now, NodeClaimReadyDependents)
}

// ClearCondition removes the condition of type t and reports whether it was
// there.
func (in *NodeClaim) ClearCondition(t string) bool {
	return conditions.Delete(&in.Status.Conditions, t)
}

// GetCondition returns the condition of type t, or nil.
func (in *NodePool) GetCondition(t string) *metav1.Condition {
	return conditions.Get(in.Status.Conditions, t)
}

// IsTrue reports whether the condition of type t is present and True.
func (in *NodePool) IsTrue(t string) bool { return conditions.IsTrue(in.Status.Conditions, t) }

// SetCondition sets the condition of type t (see NodeClaim.SetCondition);
// setting ValidationSucceeded or NodeClassReady also recomputes Ready.
func (in *NodePool) SetCondition(t string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	return setWithRoot(&in.Status.Conditions, in.Generation, t, status, reason, message, now, NodePoolReadyDependents)
}

// ClearCondition removes the condition of type t and reports whether it was
// there.
func (in *NodePool) ClearCondition(t string) bool {
	return conditions.Delete(&in.Status.Conditions, t)
}

func setWithRoot(conds *[]metav1.Condition, gen int64, t string, status metav1.ConditionStatus, reason, message string, now time.Time, dependents []string) bool {
	changed := conditions.Set(conds, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
	}, now)
	if slices.Contains(dependents, t) {
		root := conditions.Root(*conds, ConditionTypeReady, gen, dependents...)
		changed = conditions.Set(conds, root, now) || changed
	}
	return changed
}
