// Package disruption is dovetail's pure disruption planner: given a snapshot
// of the cluster (the engine's Input), each NodePool's disruption settings,
// the state of each node and the PodDisruptionBudgets, Plan decides which
// nodes to remove or replace now and why every other node is kept.
//
// # Contract
//
//   - Pure: no API client, no cloud, no clock (Input.Now is an input), no
//     randomness; the same Input always gives the same Plan.
//   - Every command is safe as planned: its pods fit on what remains plus
//     its replacements under every constraint the engine enforces, its
//     nodes fit the budgets of their pools for its reason, the pods it
//     evicts never exceed a PDB's allowance, no do-not-disrupt pod is
//     evicted (drift with a terminationGracePeriod excepted), and its
//     replacements never cost more than what they replace.
//   - Every managed node that is not in a command has a Kept entry with a
//     stable Code and a message a person can act on.
//
// # Methods, in order
//
//  1. Empty: nodes with no reschedulable pod, past consolidateAfter, that
//     no pending pod would use; one command per pool, within the Empty
//     budget.
//  2. Drifted: oldest first, empty ones first, one node per command, any
//     number of replacements, within the Drifted budget.
//  3. Underutilized (policies WhenEmptyOrUnderutilized and Balanced):
//     first the largest batch of candidates (ranked by price per unit of
//     disruption cost) whose pods re-pack onto the rest of the fleet plus
//     cheaper new nodes (many nodes to many, not only to one), then single
//     nodes, each accepted command applied before the next is tried, until
//     the budgets are spent or nothing saves.
//
// Each what-if is a engine.Model solve (the compiled cluster with nodes
// removed and their pods pending), so a candidate costs a fraction of a
// full solve; accepted commands are folded into the model's input (their
// pods bound where they were planned, replacements in flight).
//
// # Files
//
//   - planner.go: Compute, the pass's setup (nodes, pools, budgets,
//     PDBs), the rules every method shares (filter, kept reasons) and the
//     finish (prices, expiring nodes, the lower bound).
//   - pricing.go: what a node costs and what evicting its pods costs.
//   - whatif.go: the compiled model, what-ifs, settling and accepting a
//     command.
//   - empty.go, drift.go, consolidation.go, repair.go: the methods, in the
//     order above (repair's Unhealthy commands come before them).
//   - types.go, codes.go: the input, the plan and the kept codes.
//
// # Must not
//
// Import client-go, controller-runtime, a cloud SDK, or read a clock.
package disruption
