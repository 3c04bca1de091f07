// Package wirefuzz holds the fuzz target of the emulator's request parsing
// (FuzzRequests). It is a package of its own so that `go test -fuzz` builds
// only the emulator, not the AWS SDK service clients the emulator's other
// tests import. Its seed corpus runs with every `go test`.
package wirefuzz
