package interruption

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// DefaultScheduledEventsInterval is how often the cloud's scheduled events
// are polled (the peer polls EC2 DescribeInstanceStatus every minute).
const DefaultScheduledEventsInterval = time.Minute

// ScheduledEventsOptions configure the polling of the cloud's scheduled
// events (cloudprovider.ScheduledEvents; on AWS DescribeInstanceStatus).
type ScheduledEventsOptions struct {
	// Source is polled; nil turns the polling off.
	Source cloudprovider.ScheduledEvents
	// Interval between polls (DefaultScheduledEventsInterval when 0).
	Interval time.Duration
}

// WithScheduledEvents makes the controller poll the cloud's scheduled
// events and act on each scheduled stop, retirement or reboot of an owned
// instance as on a scheduled-change message: replace the node, then drain
// it. It returns c.
func (c *Controller) WithScheduledEvents(o ScheduledEventsOptions) *Controller {
	if o.Interval <= 0 {
		o.Interval = DefaultScheduledEventsInterval
	}
	c.scheduled = o
	return c
}

// scheduledPoller polls the scheduled events. seen holds the ids of the
// events acted on that the last poll still reported, so an event is acted
// on once per process (a restart acts again; the NodeClaim is then already
// being deleted and nothing more happens).
type scheduledPoller struct {
	c    *Controller
	seen map[string]bool
}

var _ manager.LeaderElectionRunnable = (*scheduledPoller)(nil)

// NeedLeaderElection: only the leader polls.
func (p *scheduledPoller) NeedLeaderElection() bool { return true }

// Start polls at once, then every interval (on the clock), until ctx ends.
func (p *scheduledPoller) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		p.poll(ctx)
		t := p.c.clock.NewTimer(p.c.scheduled.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
	}
	return nil
}

// poll acts on each event not acted on before; one that fails is tried
// again at the next poll.
func (p *scheduledPoller) poll(ctx context.Context) {
	evs, err := p.c.scheduled.Source.ScheduledEvents(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.c.log.Error(err, "polling scheduled events; trying again", "retryIn", p.c.scheduled.Interval)
		}
		return
	}
	current := map[string]bool{}
	for i := range evs {
		ev := &evs[i]
		current[ev.ID] = true
		if p.seen[ev.ID] || !ev.Disruptive() {
			continue
		}
		var errs []error
		for _, id := range ev.InstanceIDs {
			errs = append(errs, p.c.handleInstance(ctx, ev, TypeScheduledChange, id))
		}
		if err := errors.Join(errs...); err != nil {
			p.c.log.Error(err, "acting on a scheduled event; trying again at the next poll", "id", ev.ID, "code", ev.State)
			continue
		}
		p.seen[ev.ID] = true
	}
	for id := range p.seen {
		if !current[id] {
			delete(p.seen, id)
		}
	}
}
