package conditions

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get returns the condition of type t, or nil.
func Get(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// Set puts c into conds, replacing the condition of the same type. The
// transition time is kept when the status did not change and set to now when
// it did. It reports whether anything changed.
func Set(conds *[]metav1.Condition, c metav1.Condition, now time.Time) bool {
	if c.Reason == "" {
		// The CRD schema requires a non-empty reason; use the status.
		c.Reason = string(c.Status)
	}
	existing := Get(*conds, c.Type)
	if existing == nil {
		c.LastTransitionTime = metav1.NewTime(now)
		*conds = append(*conds, c)
		return true
	}
	if existing.Status == c.Status && existing.Reason == c.Reason &&
		existing.Message == c.Message && existing.ObservedGeneration == c.ObservedGeneration {
		return false
	}
	if existing.Status != c.Status {
		c.LastTransitionTime = metav1.NewTime(now)
	} else {
		c.LastTransitionTime = existing.LastTransitionTime
	}
	*existing = c
	return true
}

// Delete removes the condition of type t and reports whether it was there.
func Delete(conds *[]metav1.Condition, t string) bool {
	for i := range *conds {
		if (*conds)[i].Type == t {
			*conds = append((*conds)[:i], (*conds)[i+1:]...)
			return true
		}
	}
	return false
}

// IsTrue reports whether the condition of type t is present and True.
func IsTrue(conds []metav1.Condition, t string) bool {
	c := Get(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

// Root derives the root condition (rootType) from its dependents: True when
// every dependent is True; otherwise False if a dependent is False, else
// Unknown, with the reason and message of the first such dependent (in
// dependents order; a missing dependent counts as Unknown).
func Root(conds []metav1.Condition, rootType string, generation int64, dependents ...string) metav1.Condition {
	root := metav1.Condition{Type: rootType, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: generation}
	var firstUnknown *metav1.Condition
	for _, t := range dependents {
		c := Get(conds, t)
		switch {
		case c == nil:
			if firstUnknown == nil {
				firstUnknown = &metav1.Condition{Reason: "AwaitingReconciliation", Message: "condition " + t + " has not been reported"}
			}
		case c.Status == metav1.ConditionFalse:
			return metav1.Condition{Type: rootType, Status: metav1.ConditionFalse, Reason: c.Reason,
				Message: t + ": " + c.Message, ObservedGeneration: generation}
		case c.Status != metav1.ConditionTrue:
			if firstUnknown == nil {
				firstUnknown = &metav1.Condition{Reason: c.Reason, Message: t + ": " + c.Message}
			}
		}
	}
	if firstUnknown != nil {
		return metav1.Condition{Type: rootType, Status: metav1.ConditionUnknown, Reason: firstUnknown.Reason,
			Message: firstUnknown.Message, ObservedGeneration: generation}
	}
	return root
}
