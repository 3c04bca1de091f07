// Package eventsink bounds what recording Kubernetes Events can cost the
// controller.
//
// client-go's events broadcaster starts one goroutine per Event and each
// waits for its API call; when the API server is slow (a fleet of
// thousands of nodes coming up at once) they pile up without bound: 6,000
// to 8,000 goroutines and ~30 MB of stacks were seen at 1,300 kwok nodes.
// Sink sits between the broadcaster and the API: at most Options.InFlight
// calls run at once, at most Options.Queue more wait for one, and any Event
// past that is dropped at once (Events are best effort; the broadcaster
// itself drops when its queue is full), counted, and logged once a minute
// at most. Recorder builds the broadcaster on a Sink and the recorder the
// controllers use.
//
// What must not live here: deciding which Events to emit, or their text
// (the controllers own those).
package eventsink
