// Package workload generates seeded scheduling inputs for the engine's
// benchmarks and cost tests, and for anyone who wants the same shapes
// (dovetail simulate, the oracle):
//
//   - Reference: the peer's reference benchmark (benchmark.md): 400
//     synthetic instance types (i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, 0.1 per
//     vCPU plus 0.1 per GB an hour, spot in two zones and on-demand in
//     three), one NodePool, and N pods of five kinds (generic, zone spread,
//     hostname spread, zone self-affinity, hostname anti-affinity) with
//     requests drawn from the benchmark's menus.
//   - Preferences: the "preferences" shape (preferred zone affinity,
//     preferred zone and hostname anti-affinity).
//   - Mixed: deployments over the built-in us-east-1 catalog with the seed
//     cluster's NodePools (spot arm64 at weight 20, multi-arch on-demand at
//     weight 10), optional tainted team NodePools, daemonsets, and a chosen
//     mix of zone and hostname spread, anti-affinity, arm64/amd64 splits and
//     zonal volumes. MixedScenarios lists the 21 the cost tests assert on.
//   - Families: seeded Shapes unlike the Mixed ones (few uneven Deployments
//     under zone spread, many Deployments of different sizes under spread,
//     spot pools with an on-demand fallback and a pool with no capacity
//     type requirement, small pods beside half-node pods, large DaemonSets,
//     arm64-preferring weighted pools, team-tainted Deployments).
//     TuningFamilies are what tuning looks at; HeldOutFamily builds the same
//     shapes with other seeds and parameters (HeldOutKnobs), is checked by
//     the cost tests in CI, and is never looked at while tuning.
//
// Everything is deterministic: the same arguments give the same input.
// Randomness comes from math/rand/v2 PCG seeded by the caller.
//
// See ExampleReference.
package workload
