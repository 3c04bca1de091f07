// Package explain is `dovetail explain pod NS/NAME` and `dovetail explain
// nodeclaim NAME`: it reads a live cluster (read-only, through the
// kubeconfig, with pkg/clusterdump) or simulate input (-f, with
// pkg/simulate), builds the engine's input (pkg/snapshot, the built-in
// catalog) and prints pkg/explain's answer as text, json or yaml.
//
// Options / NewCmd / Run as in cmdutil; the answer goes to stdout,
// notices to stderr. Exit codes: 0 explained, 1 a cluster error, 2 bad
// input (a reference that is not in the cluster or the files, named; a
// flag; a file). `explain node` is refused until the disruption planner
// exists.
package explain
