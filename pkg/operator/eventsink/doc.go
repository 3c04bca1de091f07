// Package eventsink is the controller's Kubernetes Event recorder, built
// so that recording Events has a bounded cost.
//
// client-go's events broadcaster starts goroutines per Event (the
// recorder one to hand the Event over, the broadcaster one to write it),
// and its series refresh writes every Event series while holding the lock
// those goroutines wait for. With a slow API server (a fleet of thousands
// of nodes coming up at once) they pile up without bound: 11,300
// goroutines, each holding a copy of its Event, were seen at 1,300 kwok
// nodes with a bounded sink under the broadcaster, and 6,000-8,000
// without one.
//
// Recorder replaces the broadcaster: Eventf builds the events.k8s.io/v1
// Event and puts it on a queue without blocking and without starting a
// goroutine; Options.InFlight workers write the queue; an Event past
// Options.Queue is dropped at once, counted (Options.Dropped, the
// dovetail_events_dropped_total metric) and logged once a minute at most.
// A repeat of an Event written within Options.Dedupe (same object, type,
// reason, action, note and related object; 2 minutes by default) is not
// written again: Events are not aggregated into series. The Events of one
// reason are rate-limited (Options.Rate a second with Options.Burst at
// once; 10 and 100 by default): past that they are dropped and counted as
// dropped ones are, so that a burst of thousands of pods nominated at
// once costs the API server a hundred writes, not thousands.
//
// What must not live here: deciding which Events to emit, or their text
// (the controllers own those).
package eventsink
