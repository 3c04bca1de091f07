// Package cmdutil holds what every dovetail subcommand shares: the exit-code
// contract (0 ok, 1 internal error, 2 bad input) and the error types that
// select it.
//
// Commands follow the Options / NewCmd / run split: NewCmd only parses flags
// into an Options struct, and a run function does the work, so tests can call
// run directly. Data goes to stdout, notices and progress to stderr.
//
// Nothing here may exit the process; only cmd/dovetail calls os.Exit.
package cmdutil
