// Package cmdutil holds what every dovetail subcommand shares: the exit-code
// contract (0 ok, 1 internal error, 2 bad input) and the error types that
// select it.
//
// Commands follow the Options / NewCmd / run split: NewCmd only parses flags
// into an Options struct, and a run function does the work, so tests can call
// run directly. Data goes to stdout, notices and progress to stderr.
//
// RESTConfig and Client are what the read-only commands (snapshot,
// explain, cost, top, migrate) connect with: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; a missing path is bad input naming it.
//
// Nothing here may exit the process; only cmd/dovetail calls os.Exit.
package cmdutil
