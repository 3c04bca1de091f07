package awsemu

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// timer kinds: what happens to an instance when a timer fires. Each is
// applied only if the instance is still in the state the timer expects,
// so a stale timer is harmless.
const (
	timerBoot           = iota // pending -> running
	timerShutdown              // shutting-down -> terminated
	timerStop                  // stopping -> stopped
	timerExpire                // terminated -> removed from DescribeInstances
	timerSpotTerminate         // spot interruption notice over -> shutting-down
	timerScheduledEvent        // a scheduled event starts (instancestatus.go)
	timerReservationEnd        // a capacity reservation's end date (id: the reservation's)
	timerRebooted              // a reboot ends (reboot.go)
	timerBlockStart            // a Capacity Block starts (id: the reservation's; capacityblocks.go)
	timerBlockWarning          // a Capacity Block's expiration warning
	timerBlockReclaim          // a Capacity Block's instances start terminating
)

type timerEntry struct {
	at   time.Time
	seq  uint64
	id   string
	kind int
}

type timerHeap struct {
	entries []timerEntry
	seq     uint64
}

func (h *timerHeap) Len() int { return len(h.entries) }
func (h *timerHeap) Less(i, j int) bool {
	if !h.entries[i].at.Equal(h.entries[j].at) {
		return h.entries[i].at.Before(h.entries[j].at)
	}
	return h.entries[i].seq < h.entries[j].seq
}
func (h *timerHeap) Swap(i, j int) { h.entries[i], h.entries[j] = h.entries[j], h.entries[i] }
func (h *timerHeap) Push(x any)    { h.entries = append(h.entries, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	n := len(h.entries)
	x := h.entries[n-1]
	h.entries = h.entries[:n-1]
	return x
}

// at schedules a timer. Callers hold mu and call poke after unlocking.
func (e *Emulator) at(t time.Time, id string, kind int) {
	e.schedule.seq++
	heap.Push(&e.schedule, timerEntry{at: t, seq: e.schedule.seq, id: id, kind: kind})
}

// advance applies every due timer and returns when the next one is due.
func (e *Emulator) advance() (next time.Time, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	for e.schedule.Len() > 0 {
		top := e.schedule.entries[0]
		if top.at.After(now) {
			return top.at, true
		}
		heap.Pop(&e.schedule)
		e.fire(top, now)
	}
	return time.Time{}, false
}

// fire applies one due timer. Callers hold mu.
func (e *Emulator) fire(t timerEntry, now time.Time) {
	switch t.kind {
	case timerReservationEnd:
		e.endReservation(t.id)
		return
	case timerBlockStart, timerBlockWarning, timerBlockReclaim:
		e.fireBlock(t.kind, t.id, now)
		return
	}
	in := e.acct.instances[t.id]
	if in == nil {
		return
	}
	switch t.kind {
	case timerBoot:
		if in.State == StatePending {
			e.transition(in, StateRunning, "", now)
		}
	case timerShutdown:
		if in.State == StateShuttingDown {
			e.transition(in, StateTerminated, "", now)
			e.at(now.Add(e.scaled(e.opts.TerminatedRetention)), in.ID, timerExpire)
		}
	case timerStop:
		if in.State == StateStopping {
			e.transition(in, StateStopped, "", now)
		}
	case timerExpire:
		if in.State == StateTerminated {
			delete(e.acct.instances, in.ID)
			if s := e.acct.subnet(in.SubnetID); s != nil {
				s.releaseIP(in.PrivateIP)
			}
			e.compactOrder()
		}
	case timerScheduledEvent:
		e.fireScheduledEvents(in, now)
	case timerRebooted:
		e.finishReboot(in, now)
	case timerSpotTerminate:
		if in.State != StateShuttingDown && in.State != StateTerminated {
			e.beginTermination(in, "Server.SpotInstanceTermination: Spot instance termination", now)
		}
	}
}

// compactOrder drops removed ids from the launch order once they make up
// half of it. Callers hold mu.
func (e *Emulator) compactOrder() {
	if len(e.acct.order) < 64 || len(e.acct.instances)*2 > len(e.acct.order) {
		return
	}
	kept := e.acct.order[:0]
	for _, id := range e.acct.order {
		if _, ok := e.acct.instances[id]; ok {
			kept = append(kept, id)
		}
	}
	e.acct.order = kept
}

// transition moves an instance to a new state and notifies subscribers.
// Callers hold mu.
func (e *Emulator) transition(in *instanceRec, state, reason string, now time.Time) {
	prev := in.State
	in.State = state
	in.StateChangeTime = now
	if reason != "" {
		in.StateReason = reason
	}
	e.log.V(1).Info("instance state", "instance", in.ID, "from", prev, "to", state)
	e.publish(InstanceEvent{Previous: prev, Instance: in.clone()})
}

// beginTermination starts shutting an instance down. Callers hold mu.
func (e *Emulator) beginTermination(in *instanceRec, reason string, now time.Time) {
	e.transition(in, StateShuttingDown, reason, now)
	e.at(now.Add(e.scaled(e.opts.ShutdownDelay)), in.ID, timerShutdown)
}

// InstanceEvent is one instance state change: Instance is the snapshot after
// the change, Previous the state before ("" for a new instance).
type InstanceEvent struct {
	Previous string
	Instance Instance
}

// Subscribe returns a channel of instance state changes (pending, running,
// shutting-down, terminated, stopping, stopped), in the order they happen.
// Delivery never blocks the emulator: events queue up for a slow reader.
// The channel is closed when ctx is done or the emulator closes.
func (e *Emulator) Subscribe(ctx context.Context) <-chan InstanceEvent {
	s := &subscriber{
		signal: make(chan struct{}, 1),
		out:    make(chan InstanceEvent),
		stop:   make(chan struct{}),
	}
	e.mu.Lock()
	e.subSeq++
	id := e.subSeq
	e.subs[id] = s
	e.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-e.closed:
		case <-s.stop:
			return
		}
		e.mu.Lock()
		delete(e.subs, id)
		e.mu.Unlock()
		s.close()
	}()
	go s.pump()
	return s.out
}

// publish queues an event for every subscriber. Callers hold mu.
func (e *Emulator) publish(ev InstanceEvent) {
	for _, s := range e.subs {
		s.push(ev)
	}
}

type subscriber struct {
	mu       sync.Mutex
	queue    []InstanceEvent
	signal   chan struct{}
	out      chan InstanceEvent
	stop     chan struct{}
	stopOnce sync.Once
}

func (s *subscriber) push(ev InstanceEvent) {
	s.mu.Lock()
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

func (s *subscriber) close() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *subscriber) pump() {
	defer close(s.out)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.signal:
				continue
			case <-s.stop:
				return
			}
		}
		ev := s.queue[0]
		s.queue[0] = InstanceEvent{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		select {
		case s.out <- ev:
		case <-s.stop:
			return
		}
	}
}

// Instances returns a snapshot of every instance DescribeInstances would
// show (terminated ones until their retention ends), in launch order.
func (e *Emulator) Instances() []Instance {
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Instance, 0, len(e.acct.instances))
	for _, id := range e.acct.order {
		if in, ok := e.acct.instances[id]; ok {
			out = append(out, in.clone())
		}
	}
	return out
}

// Instance returns a snapshot of one instance by id; ok is false when
// DescribeInstances would not show it.
func (e *Emulator) Instance(id string) (Instance, bool) {
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.acct.instances[id]
	if !ok {
		return Instance{}, false
	}
	return in.clone(), true
}
