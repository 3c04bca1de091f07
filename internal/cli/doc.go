// Package cli assembles dovetail's command tree (cobra). Each subcommand lives
// in its own package under internal/cli and is registered in NewRootCmd, so
// the whole CLI can be read in one function.
//
// The package only wires commands; it holds no business logic and never calls
// os.Exit (cmd/dovetail maps returned errors to exit codes through cmdutil).
package cli
