// Package engine is dovetail's scheduling core: a pure function from a
// snapshot of the cluster to a plan. Given the pending pods, the existing
// nodes (with their pods), the NodeClaims being launched, the DaemonSets
// and the NodePools with their instance types, Solve decides which pods go
// onto existing capacity, which new NodeClaims to launch (instance-type
// options, zone and capacity type, labels, taints, the pods each one is
// for), and why each remaining pod cannot be placed.
//
// See Example for a two-pool (spot first, on-demand fallback) plan.
//
// # Contract
//
//   - Pure: no API client, no cloud, no clock, no randomness, no
//     environment. Time-like budgets are work counts (Options), seeds are
//     inputs; the same Input always gives the same Plan.
//   - Solve never modifies its Input. Its error is only for malformed input
//     (an *InputError wrapping ErrInvalidInput, with field paths naming the
//     object); a pod that cannot be placed is data: a PodError with a stable
//     ReasonCode and a message naming the NodePools and what failed.
//   - Placements honour every hard constraint on the final node set as the
//     kube-scheduler would judge each pod with every other planned pod
//     already bound: resources (requests with init containers and sidecars,
//     pod overhead, daemonset overhead, reserved resources, max pods), node
//     selectors and required node affinity, taints, pod affinity and
//     anti-affinity in both directions, DoNotSchedule topology spread (zone,
//     hostname, capacity type; minDomains; node inclusion policies;
//     matchLabelKeys), host ports, volume zones, NodePool requirements,
//     limits and minValues. Preferences are honoured (PreferenceRespect) or
//     ignored (PreferenceIgnore).
//   - A new node comes from the highest-weight NodePool that can take the
//     pod; a lower one only when the higher cannot (requirements, taints,
//     limits, no available offering, topology). Improvement never moves a
//     pod to a lower-weight pool than construction gave it, however much
//     cheaper (TestImprovementKeepsPoolWeight).
//   - Buffers (Input.Buffers, CapacityBuffers) are room kept on purpose:
//     pods of a template that no one waits for yet, planned after the
//     pending pods with every constraint above; Plan.Buffers says where
//     each buffer's room is (existing, in flight, new, nowhere). Their pods
//     are named so they can never collide with a real pod (BufferOf).
//
// # Pipeline
//
//	Input ─▶ compile ─▶ construct ─▶ improve ─▶ finish ─▶ Plan
//	         pools × instance types × offerings, daemonset overhead
//	         pods ─▶ spec classes ─▶ classes (+ topology group membership)
//	                              ─▶ placement classes (per preference subset)
//	         construct: existing nodes and in-flight claims first (first fit),
//	                    then new claims: seed, choose the target type, fill
//	         improve:   re-pack sets of claims (journaled trials), keep cheaper
//	         finish:    right-size options, requirements, names, reasons,
//	                    lower bound (pkg/engine/bound)
//
// # What-ifs
//
// Compile turns an Input into a Model: the compiled, read-only parts
// (zones, resources, daemonset overhead, pools with their instance types and
// offerings, the existing nodes and in-flight claims with what their pods
// use, and the label sets those pods count in for topology groups). A
// Model answers WhatIf questions ("these nodes are gone, place their pods
// on what remains plus new nodes") with a fresh placement state over the
// shared parts, at a fraction of a Solve; Commit folds an answer in (pods
// bound where planned, new claims in flight) without compiling again. A
// what-if plans exactly what Solve plans on the input rewritten by hand
// (TestModelWhatIfMatchesSolve). pkg/disruption asks its questions this way.
//
// # Many pools
//
// Pools that differ only in name, template labels, taints (but for which
// daemonsets tolerate them), limits and requirements on keys their
// instance types do not carry are twins (cpool.twin): they share one
// compiled type list, answer every node selector term that does not name
// one of their own keys alike, and a tier tries them as one pool that
// overflows in name order. A cluster with a NodePool per team costs about
// one pool (BenchmarkSolveManyPools, TestTwinPools).
//
// Pools that are not twins (each allows types of its own) still share what
// a type is in them wherever they filter its offerings alike: a tshare
// (the type, its usable offerings, allocatable less daemonsets) per type,
// zone/capacity-type/reservation filter and daemonset overhead, so a pool
// costs one small record per type it allows (typeshare.go,
// TestSharedTypesAreInvisible).
//
// # Vocabulary
//
//   - Class: pods that are interchangeable for placement (same requests,
//     same constraints, same topology group memberships). The engine works
//     per class, so a Deployment of a thousand replicas costs little more
//     than one pod.
//   - Placement class: a class with one subset of its preferences treated as
//     requirements. Relaxation moves a pod to the next subset (lowest total
//     weight dropped first).
//   - Topology group: the pods one spread, affinity or anti-affinity term
//     counts (namespaces and selector) by one node label, with per-domain
//     counts of members and owners. A domain is a zone, a capacity type, a
//     node (hostname) or a label value.
//   - Claim: a planned NodeClaim. While it is built it has a target type
//     (what it is filled up to) and a set of still-allowed types, zones and
//     capacity types; at the end it is right-sized: its options are every
//     type that holds its pods, cheapest available offering first.
//   - Anchor: a pod that needs a node of its own (hostname anti-affinity or
//     spread among its own kind); anchors seed claims first, and the claims
//     are sized so the rest of the pods fill them.
//   - Zone quota: for a zone spread that counts only its own class, the
//     final per-zone counts are fixed up front (floor or ceil of the total),
//     whatever its node inclusion policies (the class's pods always count
//     where they land).
//
// # Zones and domains of new nodes
//
// A claim is pinned to one zone (and capacity type) as soon as a pod whose
// zone matters lands on it: a pod that owns or is counted by a zone-keyed
// spread, affinity or anti-affinity. Pinned values appear in the claim's
// requirements, so the node the cloud launches (the cheapest available
// offering among the options) is in that zone. Claims of pods whose zone
// does not matter keep every zone their pods allow.
//
// # Cost
//
// Construction fills each new claim to balance cpu and memory, choosing the
// target type by filling candidates on paper and comparing what the fill is
// worth (pods valued at the pool's resource prices, per zone once the claim
// is pinned to one) against the price; a claim made for a pod whose zone
// does not matter and then pinned by one whose zone does has its target
// chosen again at the zone's prices (spot prices differ by zone).
// Improvement re-packs (pool, zone) groups with other heuristic settings
// (for large inputs, first those with resource prices and retargeting),
// claims one at a time, in pairs (on large inputs, 500 pending pods or
// more, a pair's pods are not first offered to the other claims' spare
// room: the single re-packs just did, and the offer's scan of every claim
// spent the budget) and lopsided claims in pairs, and last each pool's
// claims all at once across zones (pods whose zone does not matter move
// beside the pods a zone spread forces into a zone), keeping only cheaper
// results. On a small input (under 500 pending pods, no existing nodes
// or in-flight claims) it then swaps large claims between zones: for each
// pair of zones holding a pool's claims, their claims are re-packed around
// an empty claim of the type of one zone's dearest claim opened in the
// other zone (and, in a second try, both zones' dearest types exchanged),
// the zone-constrained pods placed first without filling so that each
// zone's spread pods settle there, then the zone-free pods in the room
// left; a kept swap is followed by the local re-packs again. A small input (under 500 pending pods, no existing nodes or
// in-flight claims, at least 4 new claims) whose claims of one pool
// lie in several zones is solved again with the zone tie-break rotated
// (which zone the first, largest claims land in; zones differ in price),
// once per other zone, then once more at the rotation that did best with
// a second setting (zone-constrained pods placed first, a wider band for
// larger targets: each zone's large claims are sized by the pods a spread
// forces there before the zone-free pods fill them, which matters where
// large daemonsets make every extra node dear), and the cheapest plan is
// kept, the first among equals, so plans stay deterministic. Work is bounded by
// Options.ImprovementBudget
// (DefaultImprovementBudget scales with the input). Plan.LowerBound,
// from pkg/engine/bound, bounds every plan for the pods put on new claims
// that fills pools by weight as the engine does (per pod class, the pools
// of the weight tier the plan used for it); per independent part it is
// the largest of the linear relaxation (with whole pods per node, the
// configuration LP, for small parts; no node holds more of a class's pods
// than its zone spread leaves for the node's zone), a zone floor (every zone with pods
// a spread forces into it pays at least one node and their requests at
// the zone's cheapest unit prices) and bound.Floor (whole nodes, for parts
// of at most 500 pods: subset-sum coverings per resource and of cpu and
// memory jointly, and, for parts of at most 8 groups, the exact packing of
// the pods into whole nodes zone by zone). pkg/engine/bound/doc.go proves
// each.
package engine
