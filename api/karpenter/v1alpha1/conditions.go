package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/api/internal/conditions"
)

// ConditionTypeReady is the overlay's root condition, as the peer's.
const ConditionTypeReady = "Ready"

// GetCondition returns the condition of type t, or nil.
func (in *NodeOverlay) GetCondition(t string) *metav1.Condition {
	return conditions.Get(in.Status.Conditions, t)
}

// SetCondition sets the condition of type t, stamped with the object's
// generation; lastTransitionTime moves only when the status changes. It
// reports whether anything changed.
func (in *NodeOverlay) SetCondition(t string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	return conditions.Set(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	}, now)
}
