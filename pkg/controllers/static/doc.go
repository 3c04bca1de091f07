// Package static keeps each static NodePool (spec.replicas, the
// StaticCapacity feature gate) at its replica count: it creates NodeClaims
// when the pool has fewer than spec.replicas that are not being deleted,
// and deletes the ones disruption.ScaleDown picks when it has more.
//
// # What it counts, and why it cannot overshoot
//
// Every pass lists the pool's NodeClaims (label karpenter.sh/nodepool)
// from the API server, not from the cache or memory: NodeClaims being
// deleted count against limits.nodes (their instances still run) but not
// toward spec.replicas. A pass creates at most
// min(replicas - active, limits.nodes - all), so neither a burst of scale
// changes, a drift replacement racing it, nor a restart after a crash
// (whatever it created before is in the list) takes the pool past
// limits.nodes. controller-runtime never reconciles one pool in two
// workers at once, and leader election keeps one controller acting.
//
// # What it leaves to others
//
// The NodeClaims it creates are ordinary ones (provisioning's shape, from
// engine.StaticNodeClaim: every instance type the pool allows, cheapest
// offering first, at the prices and capacity NodeOverlays give when the
// NodeOverlay gate is on, as provisioning's), owned by the NodePool, so the lifecycle controller
// launches them, termination drains them gracefully (PDBs, do-not-disrupt,
// terminationGracePeriod) when they are deleted, and deleting the pool
// deletes them through the garbage collector. Provisioning plans no new
// node in a static pool (snapshot.ReasonStaticPool) but places pending
// pods on its nodes; the disruption planner never consolidates them
// (PoolPolicy.Static) and replaces drifted ones within the Drifted budget,
// this controller creating the replacement within limits.nodes.
//
// # Must not
//
// Decide in the controller what the pure core decides (which node to
// remove is disruption.ScaleDown), sleep, or keep a count in memory.
package static
