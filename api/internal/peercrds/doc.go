// Package peercrds fetches the peer's (Karpenter's AWS provider) published
// CRD files through the Go module proxy, for the tests that hold dovetail's
// API to them. The files are read at test time and never copied into this
// repository.
//
// What must not live here: anything production code uses; only tests
// import this package.
package peercrds
