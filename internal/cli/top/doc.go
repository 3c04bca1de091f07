// Package top is `dovetail top`: a live view of any cluster (one dovetail
// manages, one the peer or Cluster Autoscaler manages, or the local
// stack): per node its pool, instance type, capacity type, zone, $/h, and
// cpu and memory requests against allocatable as bars, with totals and
// $/h (pkg/fleet). Read-only, through the kubeconfig; lists paged.
//
// On a terminal it redraws the screen every --interval until Ctrl-C; with
// --plain, or when stdout is not a terminal, it prints the table once
// (with --watch, once per interval, separated by blank lines). Options /
// NewCmd / Run as in cmdutil; exit codes 0, 1 (cluster error), 2 (bad
// input).
package top
