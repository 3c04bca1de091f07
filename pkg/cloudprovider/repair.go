package cloudprovider

import (
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairPolicy is one unhealthy node condition a cloud provider asks to be
// repaired (the NodeRepair feature gate): a node whose condition
// ConditionType has had status ConditionStatus (and, with ReasonRegex, a
// matching reason) for TolerationDuration is replaced.
type RepairPolicy struct {
	// ConditionType is the node condition, e.g. Ready or
	// AcceleratedHardwareReady.
	ConditionType corev1.NodeConditionType
	// ConditionStatus is the unhealthy status (False, Unknown, ...).
	ConditionStatus corev1.ConditionStatus
	// ReasonRegex, when set, limits the policy to condition reasons it
	// matches (Go regexp, unanchored). A policy without one is the
	// fallback for its condition type and status: it applies when no
	// policy with a regex for that type and status matches the reason.
	ReasonRegex string
	// TolerationDuration is how long the condition must last (from its
	// lastTransitionTime) before the node is repaired.
	TolerationDuration time.Duration
	// TerminationGracePeriod bounds the drain of a repaired node: nil
	// inherits the NodeClaim's terminationGracePeriod; a value is used as
	// min(it, the NodeClaim's); 0 terminates without waiting for the
	// drain.
	TerminationGracePeriod *time.Duration
	// Action is what repairs the node: RepairReplace (the zero value
	// means it too) or RepairReboot.
	Action RepairAction
}

// RepairAction is how a repair policy repairs a node (the peer's names).
type RepairAction string

const (
	// RepairReplace replaces the node (the default).
	RepairReplace RepairAction = "ReplaceNode"
	// RepairReboot reboots the node's instance in place
	// (CloudProvider.Reboot), keeping its pods; a fault that outlasts
	// MaxRepairReboots reboots is repaired by replacement.
	RepairReboot RepairAction = "RebootNode"
)

// MaxRepairReboots is how many times a node is rebooted for repair before
// a fault that persists is repaired by replacing the node.
const MaxRepairReboots = 2

// Matches reports whether the condition is the policy's unhealthy state
// (its toleration aside). A ReasonRegex that does not compile matches
// nothing.
func (p RepairPolicy) Matches(c corev1.NodeCondition) bool {
	if c.Type != p.ConditionType || c.Status != p.ConditionStatus {
		return false
	}
	if p.ReasonRegex == "" {
		return true
	}
	ok, err := regexp.MatchString(p.ReasonRegex, c.Reason)
	return err == nil && ok
}

// RepairPolicyFor returns the policy that governs the condition among ps:
// of the policies with a ReasonRegex for its type and status that match
// its reason, the one tolerating it least; else the fallback for its type
// and status (no ReasonRegex); ok is false when none applies.
func RepairPolicyFor(ps []RepairPolicy, c corev1.NodeCondition) (RepairPolicy, bool) {
	var best, fallback *RepairPolicy
	for i := range ps {
		p := &ps[i]
		if p.ConditionType != c.Type || p.ConditionStatus != c.Status {
			continue
		}
		if p.ReasonRegex == "" {
			if fallback == nil {
				fallback = p
			}
			continue
		}
		if p.Matches(c) && (best == nil || p.TolerationDuration < best.TolerationDuration) {
			best = p
		}
	}
	switch {
	case best != nil:
		return *best, true
	case fallback != nil:
		return *fallback, true
	}
	return RepairPolicy{}, false
}
