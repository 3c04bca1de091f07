// Package unavailable remembers offerings the cloud recently refused for
// lack of capacity, so that the next plan does not ask for them again.
//
// When CloudProvider.Create fails with an *InsufficientCapacityError, the
// NodeClaim lifecycle controller records the refused offerings here and
// deletes the NodeClaim; provisioning then re-plans, skipping whatever
// IsUnavailable reports. An entry expires TTL after it was (last) recorded,
// measured on the injected clock, so a test steps a fake clock past the TTL
// instead of waiting.
//
// The AWS provider keeps a Cache of its own too (pkg/providers/aws/
// instancetype): the insufficient-capacity answers of its launches, which
// its instance-type list reports as unavailable offerings.
//
// # Vocabulary
//
//   - offering: (instance type, zone, capacity type), the
//     cloudprovider.OfferingKey in which capacity is refused.
//   - generation: a counter that grows on every change (a new entry, a
//     refreshed entry, an expiry noticed). A caller that caches a plan
//     derived from the set compares generations to know when to re-plan.
//
// # Invariants
//
// The Cache is safe for concurrent use. It never reads the wall clock:
// time comes from the clock given to New. Expired entries are dropped
// lazily, on the next call that reads or writes the set.
//
// See ExampleCache.
package unavailable
