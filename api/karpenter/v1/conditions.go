package v1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/api/internal/conditions"
)

// Condition is a status condition as the peer's CRDs define it: like
// metav1.Condition, but reason and message may be empty, so that
// conditions written by the peer (e.g. during a migration) validate. It
// converts to and from metav1.Condition directly.
type Condition struct {
	// Type of the condition, CamelCase.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +required
	Type string `json:"type"`
	// Status is True, False or Unknown.
	// +kubebuilder:validation:Enum=True;False;Unknown
	// +required
	Status metav1.ConditionStatus `json:"status"`
	// ObservedGeneration is the generation the condition was set for.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastTransitionTime is when the status last changed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +required
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	// Reason is a CamelCase word for the last transition (may be empty).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$`
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says more, for people (may be empty).
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`
}

// toMeta and fromMeta convert condition lists (identical layouts).
func toMeta(in []Condition) []metav1.Condition {
	if in == nil {
		return nil
	}
	out := make([]metav1.Condition, len(in))
	for i, c := range in {
		out[i] = metav1.Condition(c)
	}
	return out
}

func fromMeta(in []metav1.Condition) []Condition {
	if in == nil {
		return nil
	}
	out := make([]Condition, len(in))
	for i, c := range in {
		out[i] = Condition(c)
	}
	return out
}

// NodeClaimReadyDependents are the conditions that together make a
// NodeClaim Ready.
var NodeClaimReadyDependents = []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}

// NodePoolReadyDependents are the conditions that together make a NodePool
// Ready.
var NodePoolReadyDependents = []string{ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady}

// GetCondition returns the condition of type t, or nil.
func (in *NodeClaim) GetCondition(t string) *metav1.Condition {
	return conditions.Get(toMeta(in.Status.Conditions), t)
}

// IsTrue reports whether the condition of type t is present and True.
func (in *NodeClaim) IsTrue(t string) bool { return conditions.IsTrue(toMeta(in.Status.Conditions), t) }

// SetCondition sets the condition of type t, stamped with the object's
// generation. lastTransitionTime becomes now only when the status changes.
// Setting Launched, Registered or Initialized also recomputes Ready. It
// reports whether the conditions changed.
func (in *NodeClaim) SetCondition(t string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	conds := toMeta(in.Status.Conditions)
	changed := setWithRoot(&conds, in.Generation, t, status, reason, message, now, NodeClaimReadyDependents)
	in.Status.Conditions = fromMeta(conds)
	return changed
}

// ClearCondition removes the condition of type t and reports whether it was
// there.
func (in *NodeClaim) ClearCondition(t string) bool {
	conds := toMeta(in.Status.Conditions)
	changed := conditions.Delete(&conds, t)
	in.Status.Conditions = fromMeta(conds)
	return changed
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
