// Package bound computes a lower bound on the cost of any node plan for a
// set of pending pods, by solving a strengthened LP relaxation with column
// generation and proving the bound from a dual-feasible solution.
//
// The formulation, every strengthening cut with its validity argument, and
// the algorithm are described below once the design settles; see Solve and
// ExampleSolve.
package bound
