// Package cachetrim holds the transforms the controller's informer cache
// applies to Pods and Nodes before storing them: at fleet size (30,000
// pods) the cache is most of the controller's memory, and most of a Pod is
// what only the kubelet reads (images, environment, probes, mounts, the
// service account token volume, container statuses).
//
// What a trimmed object keeps is what some controller reads (see Pod and
// Node); everything else is zero. The rule that makes this safe: no code
// path writes a Pod or a Node from a cached object with Update. The
// controllers write Pods only with a raw merge patch of
// status.nominatedNodeName and evictions, and Nodes with merge patches
// computed from a copy of the cached object (client.MergeFrom), which
// carry only the fields that changed; metadata and spec of a Node are kept
// whole, so no list in a patch (taints, finalizers) is a trimmed one.
//
// Cached Pods are also read without deep copies, and the pods of one kind
// share their repeated parts (labels, annotations, owner references, node
// selector, tolerations, affinity, topology spread constraints, the empty
// security context, the trimmed containers and their resources; interned
// strings such as the scheduler's condition message; share.go): a reader
// must never change
// a map, a slice or a pointed-to field of a Pod it read from the cache
// (changing a shallow copy's scalar fields is fine).
//
// Nodes and NodeClaims hold their repeated strings once (labels,
// annotations, taints, conditions; a NodeClaim's requirement values), and
// nodes of one instance type share their capacity and allocatable lists:
// no reader changes those of a Node it read from the cache either.
//
// The tables of shared values belong to a Trimmer, one per cache
// (Options makes it): nothing is kept at package level. Controllers do not
// import this package; they list cached Pods through
// pkg/controllers/nodeclaimutil (ListPods, Store).
//
// Must not: import controllers or cloud packages (the operator and the
// controllers' test environment both use it); keep state at package level.
package cachetrim
