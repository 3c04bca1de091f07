// Package snapshot is the `dovetail snapshot` command: it reads a live
// cluster through the kubeconfig, read-only (list requests only, paged),
// and writes it as `dovetail simulate` input (pkg/clusterdump does the
// reading and the sanitizing).
//
// The command follows the Options / NewCmd / Run split (see cmdutil). The
// YAML goes to stdout or --output FILE, written whole or not at all (a
// temporary file renamed into place); progress goes to stderr. Ctrl-C or
// SIGTERM end the read (the command's context) with exit 1 and nothing
// written. Exit codes: 0 written, 1 a cluster or write error, 2 bad input
// (flags, a missing or unreadable kubeconfig, named). See docs/snapshot.md.
package snapshot
