// Package conditions holds the pure condition bookkeeping shared by the API
// packages: set a condition (moving lastTransitionTime only when the status
// changes) and derive a root condition from its dependents.
//
// The time is always an argument; nothing here reads the clock.
//
// Vocabulary: a root condition (Ready) summarises its dependents (for a
// NodeClaim: Launched, Registered, Initialized). Callers are the API packages
// only; controllers use the methods on NodePool, NodeClaim and EC2NodeClass.
package conditions
