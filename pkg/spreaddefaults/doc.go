// Package spreaddefaults is the peer's SCHEDULER_CONFIG: the cluster's
// kube-scheduler PodTopologySpread defaultConstraints (defaultingType
// List), which the scheduling simulation must mirror.
//
//	SCHEDULER_CONFIG / --scheduler-config ──Parse──▶ *Config
//	pods + Services, ReplicationControllers, ReplicaSets, StatefulSets
//	      ──Apply──▶ pods, each without constraints of its own given the
//	                 defaults with the selector kube-scheduler deduces for it
//
// # Vocabulary
//
//   - Document: {podTopologySpread: {defaultConstraints: [...]}} in YAML or
//     JSON, decoded strictly (an unknown field is an error).
//   - Deduced selector: what kube-scheduler's DefaultSelector gives a pod:
//     the selectors of the Services of its namespace that select it, merged
//     as matchLabels (in name order, a later one wins a key), the selector
//     of its controlling ReplicationController merged on top, or that of
//     its controlling ReplicaSet or StatefulSet added as matchExpressions.
//     A pod with nothing deduced gets no defaults.
//
// # Invariants
//
// Pure: no client, no clock. Apply never modifies its input: a defaulted
// pod is a shallow copy whose spec.topologySpreadConstraints is new (and
// its own; everything else is shared with the original, so callers treat
// the result as read-only, as they do cache objects). A pod with any
// constraint of its own is returned as is, all or nothing, as
// kube-scheduler does. Parse and Validate name every problem by its path in
// the document (podTopologySpread.defaultConstraints[1].topologyKey).
package spreaddefaults
