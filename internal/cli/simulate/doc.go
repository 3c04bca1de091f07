// Package simulate is the `dovetail simulate` command: it reads manifest
// files (-f), runs the scheduling engine once through pkg/simulate (or,
// with --disruption, the disruption planner over the cluster they hold) and
// prints the plan (-o table|json|yaml).
//
// The command follows the Options / NewCmd / Run split: NewCmd only parses
// and validates flags, Run does the work with the dependencies held in
// Options (stdin/stdout/stderr, the clock, file access), so tests can call
// it directly or pass runF to NewCmd to check the parsed options.
//
// Output contract: the plan alone goes to stdout, rendered into a buffer
// first so that nothing reaches stdout on failure; notices and warnings go
// to stderr. Exit codes (cmdutil): 0 a plan was made, even with
// unschedulable pods; 1 internal error; 2 bad input. See docs/simulate.md.
package simulate
