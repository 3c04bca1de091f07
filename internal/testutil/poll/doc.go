// Package poll waits in tests without sleeping as synchronisation: a
// condition is polled at an interval until it holds or a deadline passes
// (Until), or checked to keep holding for a while (While).
//
// Every test package uses it, through its own short wrapper where the
// package wants a different interval or signature; the loops live only
// here. It imports nothing of dovetail's, so any package can use it. It is
// for tests only: production waits belong on the injected clock.
package poll
