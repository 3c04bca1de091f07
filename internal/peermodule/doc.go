// Package peermodule fetches files of the peer's (Karpenter's AWS
// provider) published module through the Go module proxy, for tests that
// hold dovetail to the peer's CRDs, chart and settings. The files are read
// at test time and never copied into this repository.
//
// What must not live here: anything production code uses; only tests (and
// test helpers such as api/internal/peercrds, and test/upstream, the
// harness of `make test-upstream`) import this package.
package peermodule
