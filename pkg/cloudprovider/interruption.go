package cloudprovider

import (
	"context"
	"time"
)

// InterruptionKind says what a cloud's interruption event announces.
type InterruptionKind string

// Interruption kinds.
const (
	// InterruptionSpot: the cloud takes a spot instance back shortly.
	InterruptionSpot InterruptionKind = "SpotInterruption"
	// InterruptionRebalance: a spot instance is at elevated risk of
	// interruption (advisory).
	InterruptionRebalance InterruptionKind = "RebalanceRecommendation"
	// InterruptionScheduledChange: scheduled maintenance will stop or
	// retire the instance.
	InterruptionScheduledChange InterruptionKind = "ScheduledChange"
	// InterruptionStopping: the instance is stopping or stopped.
	InterruptionStopping InterruptionKind = "Stopping"
	// InterruptionTerminating: the instance is shutting down or gone.
	InterruptionTerminating InterruptionKind = "Terminating"
	// InterruptionOther: a well-formed event about something else (e.g. an
	// instance starting); nothing to do.
	InterruptionOther InterruptionKind = "Other"
)

// InterruptionEvent is one event of a cloud's interruption queue, in terms
// no cloud owns.
type InterruptionEvent struct {
	// ID is the cloud's id of the event, for logs.
	ID string
	// Kind is what the event announces; State is the cloud's word for the
	// instance state it reports, for messages ("" when none).
	Kind  InterruptionKind
	State string
	// InstanceIDs are the affected instances: the last path segment of
	// their NodeClaims' providerIDs.
	InstanceIDs []string
	// Time is when the cloud raised the event (zero when unknown).
	Time time.Time
	// NotBefore is when a scheduled change starts: the instance is
	// stopped, retired or rebooted from then on (zero when unknown).
	NotBefore time.Time
	// Malformed is set when the event could not be read; the other fields
	// but ID and Receipt are then empty.
	Malformed error
	// Receipt is what the queue needs to delete the event; opaque.
	Receipt string
}

// Disruptive reports whether the instances will stop running: a spot
// interruption, a scheduled change, stopping or terminating. A rebalance
// recommendation is advisory.
func (e *InterruptionEvent) Disruptive() bool {
	switch e.Kind {
	case InterruptionSpot, InterruptionScheduledChange, InterruptionStopping, InterruptionTerminating:
		return true
	}
	return false
}

// InterruptionQueue is where a cloud announces that it will take instances
// away. The interruption controller reads it through this interface only.
type InterruptionQueue interface {
	// Receive waits for events; an empty result means the wait ended.
	Receive(ctx context.Context) ([]InterruptionEvent, error)
	// Delete removes a handled event.
	Delete(ctx context.Context, e InterruptionEvent) error
}

// ScheduledEvents is where a cloud reports, when asked, the changes it has
// scheduled for running instances (a retirement, a stop, a reboot). The
// interruption controller polls it through this interface only and acts
// on each event as on a scheduled change from the queue.
type ScheduledEvents interface {
	// ScheduledEvents returns the events scheduled now and not yet done,
	// of kind InterruptionScheduledChange, each with its cloud's id (stable
	// across polls), State the cloud's code for the change, NotBefore, and
	// the affected instances.
	ScheduledEvents(ctx context.Context) ([]InterruptionEvent, error)
}
