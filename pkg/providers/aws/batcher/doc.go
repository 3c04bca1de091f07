// Package batcher combines concurrent requests into fewer calls: requests
// that arrive within a short window and share a key are handed to one
// Exec call together, and each caller gets its own result back.
//
// The AWS provider uses it so that a 1,000-node scale-up makes a handful of
// CreateFleet, DescribeInstances and TerminateInstances calls instead of a
// thousand each.
//
// See ExampleBatcher.
//
// # Timing
//
// A bucket (one key) opens with its first request and closes when either
// no request joined for IdleWindow, MaxWindow passed since it opened, or it
// holds MaxItems requests. Time comes from the injected clock, so tests can
// step it.
//
// # Invariants
//
//   - Exec gets at least one request and at most MaxItems, all with the
//     same key, in arrival order, and must return exactly one Result per
//     request (a short or long answer fails the whole batch with
//     ErrResultCount).
//   - A caller whose context ends stops waiting; its request still runs.
//   - Exec runs with the batcher's context, not a caller's.
package batcher
