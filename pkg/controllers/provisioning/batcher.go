package provisioning

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Default batch windows: the peer's BATCH_IDLE_DURATION and
// BATCH_MAX_DURATION.
const (
	DefaultBatchIdleDuration = time.Second
	DefaultBatchMaxDuration  = 10 * time.Second
)

// Batcher gathers triggers into windows. A window opens at the first
// trigger and closes once Idle passes without another trigger, or Max
// after it opened, whichever comes first. Time comes from the injected
// clock, so tests step a fake clock instead of waiting.
//
// Trigger never blocks and may be called from any goroutine; Wait is
// called by one goroutine at a time.
type Batcher struct {
	clock     clock.Clock
	idle, max time.Duration
	triggers  chan struct{}
	// extended counts window extensions (for tests that step a fake
	// clock and must know the new idle timer exists).
	extended atomic.Int64
}

// NewBatcher returns a batcher with the given windows (the defaults when
// zero or negative).
func NewBatcher(clk clock.Clock, idle, max time.Duration) *Batcher {
	if idle <= 0 {
		idle = DefaultBatchIdleDuration
	}
	if max <= 0 {
		max = DefaultBatchMaxDuration
	}
	if idle > max {
		idle = max
	}
	return &Batcher{clock: clk, idle: idle, max: max, triggers: make(chan struct{}, 1)}
}

// Trigger opens a window, or extends the open one by Idle.
func (b *Batcher) Trigger() {
	select {
	case b.triggers <- struct{}{}:
	default: // a trigger is already pending; one is as good as many
	}
}

// Wait blocks until a window has opened and closed, and reports true; it
// reports false when ctx ends first.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.triggers:
	}
	maxT := b.clock.NewTimer(b.max)
	defer maxT.Stop()
	idleT := b.clock.NewTimer(b.idle)
	defer func() { idleT.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-b.triggers:
			idleT.Stop()
			idleT = b.clock.NewTimer(b.idle)
			b.extended.Add(1)
		case <-idleT.C():
			return true
		case <-maxT.C():
			return true
		}
	}
}
