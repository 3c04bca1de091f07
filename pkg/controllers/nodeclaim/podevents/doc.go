// Package podevents keeps two things on every NodeClaim that consolidation
// reads:
//
//   - status.lastPodEventTime: when a pod that is not owned by a DaemonSet
//     was last bound to the NodeClaim's node, or last became terminal
//     (Succeeded, Failed) or terminating there, or was removed from it
//     without passing through those states. It is written at most once per
//     DedupeWindow (10 s) per NodeClaim; an event inside the window is
//     written when the window ends, so the time never lags a pod event by
//     more than the window and never runs ahead of one.
//   - the Consolidatable condition: True once the NodeClaim is Initialized
//     and its pool's spec.disruption.consolidateAfter has passed since the
//     later of lastPodEventTime and initialization; absent before that, and
//     always absent with consolidateAfter: Never or without a NodePool. The
//     reconcile asks to run again (on the injected clock) when the
//     condition is due.
//
// Pod events come from the watch (an update that binds a pod, makes it
// terminal or terminating, or a deletion of a bound, still active pod; a
// creation counts only for a pod created already bound within the last
// DedupeWindow, so the informer's replay of existing pods at start-up does
// not reset every node's clock).
//
// # Invariants
//
// Everything lives on the NodeClaim (its status), so a restart loses at
// most the pod events of the time the controller was down. This package
// only writes NodeClaim status; it does not disrupt anything (the
// disruption controller reads the condition).
package podevents
