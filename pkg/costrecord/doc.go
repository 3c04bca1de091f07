// Package costrecord is the format of dovetail's in-cluster cost record:
// hourly buckets of dollars spent per NodePool (with the pool's labels, so
// a reader can group by team or any other label), kept 31 days in one
// ConfigMap under 1 MiB, so that `dovetail cost --since` survives
// controller restarts and NodeClaim deletion.
//
// The record is written by the cost controller (pkg/controllers/cost) and
// read by `dovetail cost`. Accrue adds what the running NodeClaims cost
// since the record's Through time, split at hour boundaries; a NodeClaim
// counts from its launch. Time the controller was down is accrued at the
// next write for the NodeClaims that still exist then (those deleted in
// between are missed). Encode drops hours older than Retention, then the
// oldest hours until the encoding fits MaxBytes.
//
// Pure: no API client, no clock (now is an argument).
package costrecord
