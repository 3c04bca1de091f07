// Package controller is `dovetail controller`: it parses flags and the
// environment variables users of the peer's Helm chart already set
// (CLUSTER_NAME, INTERRUPTION_QUEUE, BATCH_IDLE_DURATION,
// BATCH_MAX_DURATION, KUBE_CLIENT_QPS, KUBE_CLIENT_BURST, METRICS_PORT,
// HEALTH_PROBE_PORT, LOG_LEVEL, FEATURE_GATES, DISABLE_LEADER_ELECTION,
// SYSTEM_NAMESPACE) into operator.Options, and runs pkg/operator with the
// AWS provider.
//
// A flag wins over its variable. A value that does not parse, or options
// that do not validate, exit with code 2 and a message naming the flag or
// variable the value came from. The command follows the Options /
// NewCmdController(runF) / run split: tests pass runF to check parsing
// without starting anything.
package controller
