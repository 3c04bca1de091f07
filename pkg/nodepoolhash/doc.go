// Package nodepoolhash computes a NodePool's template hash, the value of
// the karpenter.sh/nodepool-hash annotation (with
// karpenter.sh/nodepool-hash-version) that the nodepool.hash controller
// (pkg/controllers/nodepool/hash) keeps on every NodePool and provisioning
// and lifecycle stamp on NodeClaims; a NodeClaim whose hash differs from
// its pool's has drifted (package nodeclaim/drift records that). It is a
// pure package so that controllers share it without importing each other.
//
// # What the hash covers
//
// The fields of spec.template that change what a node looks like once it
// exists and that a running node cannot pick up on its own:
//
//   - template.metadata.labels and .annotations
//   - template.spec.taints and .startupTaints (order does not matter)
//   - template.spec.nodeClassRef (group, kind, name)
//   - template.spec.expireAfter and .terminationGracePeriod, compared as
//     durations ("60m" and "1h" hash the same)
//
// Left out on purpose: requirements (a node that still satisfies the new
// requirements need not be replaced; drift compares its labels against the
// requirements instead), and everything outside the template (weight,
// limits, disruption), which governs the pool, not its nodes.
//
// The hash is the peer's: github.com/mitchellh/hashstructure/v2 (format
// v2; slices as sets, zero values and nil pointers left out) of the template
// in the peer's Go shape (package internal/peershape), written in decimal,
// with the peer's Version, so a NodeClaim stamped by either controller reads
// the same to the other and a switch between them drifts nothing
// (TestHashIsThePeers holds it to values the peer computed). Version names
// this scheme: when it changes, NodeClaims with another version get the new
// hash instead of being marked drifted. A taint's timeAdded is hashed too,
// as the peer hashes it.
//
// # Invariants
//
// Hash is a pure function of the NodePool; it does not modify it.
// The controller only ever writes the two annotations.
//
// See ExampleHash.
package nodepoolhash
