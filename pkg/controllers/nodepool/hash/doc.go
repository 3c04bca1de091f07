// Package hash is the nodepool.hash controller: it keeps the template hash
// of every NodePool (pkg/nodepoolhash: what the hash covers and why it is
// the peer's) in the karpenter.sh/nodepool-hash and
// karpenter.sh/nodepool-hash-version annotations, and moves NodeClaims of
// an older hash version to the new hash instead of marking them drifted.
//
// # Invariants
//
// The controller only ever writes the two annotations.
package hash
