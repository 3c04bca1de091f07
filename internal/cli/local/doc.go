// Package local implements the `dovetail local` command group. `local up`
// starts the whole stack (package pkg/local) in the foreground: it prints
// "ready: export KUBECONFIG=<path>" on stdout once the cluster is usable,
// progress on stderr, and stops everything on SIGINT or SIGTERM.
//
// The commands follow the Options / NewCmd / run split: NewCmdUp only
// parses flags into UpOptions; upRun does the work. Exit codes follow
// cmdutil: 0 after a signal-initiated stop, 1 on failure (DIR held by a
// live stack included), 2 for bad flags or arguments.
package local
