// Package demo is what `make run` shows: it plays a short scenario on the
// local stack (deploy a sample workload, scale it up, interrupt a spot
// node, scale it down and let consolidation shrink the fleet) and draws a
// live view of the cluster meanwhile.
//
//	RunScenario ─ deploy ─▶ wait all Running ─▶ scale up ─▶ wait ─▶ spot interruption ─▶ wait ─▶ scale down ─▶ wait fewer nodes, lower $/h ─▶ done
//	Run ─ every Tick: Collect (pods, nodes, NodeClaims) + Events ─▶ View.Render
//
// # The view
//
// On a terminal the screen is redrawn in place with plain ANSI escapes (no
// TUI library): pending and running pods, nodes by NodePool with their
// instance types and capacity types, $/h (the launched NodeClaims' prices,
// from the dovetail.sh/price-per-hour annotation the lifecycle controller
// writes), sparklines of $/h and node count over time, and the last
// events (dovetail's controller events worth reading, and the scenario's
// steps). Without a terminal each tick is one plain line (PlainLine):
//
//	15:04:05 pending=0 running=42 nodes=arm64-default:3,multi-default:2 launching=0 cost=$0.4123/h event="..."
//
// # Vocabulary
//
//   - Sample: one instant's counts (Collect).
//   - Step: a scenario phase, named in its notes (StepDeploy, StepScaleUp,
//     StepInterrupt, StepScaleDown, StepDone), so tests and users can follow it in the
//     plain output.
//
// # Invariants
//
// The demo only reads the cluster and writes its own namespace (Namespace)
// and the Deployments in it; interruptions go through the Driver's
// Interrupt (the AWS emulator). Waits poll with a deadline (StepTimeout).
// See ExamplePlainLine.
package demo
