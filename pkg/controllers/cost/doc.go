// Package cost is the controller that keeps dovetail's cost record
// (pkg/costrecord) in the cluster: every Interval (1 minute) it accrues
// what the launched NodeClaims cost since the last write, from the price
// the lifecycle controller recorded on each at launch
// (dovetail.sh/price-per-hour) and its capacity type, into hourly buckets
// per NodePool and the pool's labels, and writes the record to the
// ConfigMap dovetail-cost in the controller's namespace. `dovetail cost`
// reads it.
//
// The record is the state: a restarted controller reads it back and accrues
// the time it was down for the NodeClaims that still exist; NodeClaims
// deleted in between are not counted. A NodeClaim costs from its Launched
// condition's transition time until it is gone (a deleting NodeClaim still
// costs). NodeClaims without a recorded price are skipped.
//
// A singleton (pkg/controllers/singleton) that requeues itself; time comes
// from the injected clock. The ConfigMap is read uncached (only that one
// object: no cluster-wide ConfigMap informer) and written with optimistic
// concurrency. RBAC: create configmaps, and get/update the one named
// dovetail-cost, in the controller's namespace (config/rbac/role.yaml).
package cost
