// Package requirements is the label-constraint algebra of dovetail: the
// NodePool and NodeClaim requirements, a pod's nodeSelector and required node
// affinity, and the labels of instance types and offerings all become
// Requirements, which the scheduling engine intersects and compares in its
// hot loops.
//
// Semantics follow Kubernetes node-selector rules (In, NotIn, Exists,
// DoesNotExist, Gt, Lt) plus the Karpenter v1 extensions Gte, Lte and
// minValues. The package imports no API types of its own project: callers
// adapt plain key/operator/values, corev1.NodeSelectorRequirement,
// corev1.NodeSelectorTerm and label maps.
//
// See Example for a NodePool/pod walk-through.
//
// # Vocabulary
//
//   - Requirement: the set of values allowed for one label key, over all
//     strings plus "absent" (the node does not carry the label), and an
//     optional minValues. A nil *Requirement is "unconstrained".
//   - Requirements: at most one Requirement per key, sorted by key; adding a
//     second one for a key intersects them.
//   - Node side / incoming side: Compatible is asymmetric. The receiver
//     describes what a node may be (NodePool, NodeClaim, instance type); the
//     argument describes what is asked of it (a pod).
//   - Open key: a key the node side leaves undefined but might still define
//     (see CompatibleOptions.OpenKeys).
//
// # Canonical form
//
// Every Requirement is one of:
//
//	finite      the listed values (In). Empty and allowing absence is
//	            DoesNotExist; empty and not allowing absence is unsatisfiable
//	            (only reachable through Intersection or Gt/Lt at the int64
//	            limits).
//	complement  every string except the listed ones (NotIn: also allows
//	            absence; Exists: excludes nothing, needs the label), optionally
//	            narrowed to base-10 integers within inclusive bounds
//	            (Gt 5 == Gte 6, Lt 10 == Lte 9).
//
// Bounds compare values exactly as Kubernetes does (strconv.ParseInt base 10:
// "06" and "+6" are 6); a value that is not an integer is never inside
// bounds, and bounded complements keep only the exclusions that are inside
// their bounds. Because each integer has infinitely many spellings, a bounded
// complement with non-empty bounds is never empty, whatever it excludes.
// With this normalisation two requirements allow the same set exactly when
// their canonical fields agree, so String, Operator and the wire form are
// functions of the set: A∩B and B∩A print identically.
//
// # Operations
//
//   - Intersection: values allowed by both; absence only if both allow it;
//     minValues is the larger. A result equal to an input is that input
//     (no allocation).
//   - Compatible(o): some node satisfies both sides. Keys both constrain must
//     intersect; keys only the node side constrains must be satisfiable; a key
//     only o constrains is undefined on the node side and, by default, the
//     node will not carry it, so o must allow absence (NotIn, DoesNotExist).
//     CompatibleWith lets the caller declare open keys instead (Karpenter,
//     for instance, treats well-known labels the provider fills as open).
//   - Matches(labels): a node with exactly these labels satisfies every
//     requirement. matchFields' metadata.name lives under the pseudo key
//     NodeNameKey.
//   - MinValuesSatisfied / MinValuesSatisfiedBy: each key with minValues
//     still has at least that many distinct values available.
//
// # Invariants
//
//   - Inputs are never modified; requirements are immutable after New and
//     safe to share across goroutines; Requirements copies are independent.
//   - No output depends on map iteration order: keys, values, strings,
//     expressions and the key named by an error are all in sorted order.
//   - User input errors are *Error (key, field path, reason) wrapping a
//     sentinel; FieldError converts one to a field.Error. Incompatibilities
//     are *IncompatibleError with an IncompatibleReason and, for unknown
//     keys, a "(typo of %q?)" hint. Nothing panics on bad input (MustNew is
//     for constants).
//   - Has on a finite set never allocates (linear scan up to 8 values,
//     bisection beyond); Compatible and Matches allocate only on failure.
//
// # Where this differs from Kubernetes and Karpenter
//
// Deliberate choices, each covered by a test:
//   - Keys must be label keys and In/NotIn values label values, as the
//     Kubernetes scheduler requires; Gt/Lt/Gte/Lte take any base-10 int64
//     ("-3", "+5", "007"), where Kubernetes also demands a label value (so no
//     sign) and the Karpenter CRD a non-negative number. Those schema rules
//     belong to the API layer.
//   - NotIn without values is accepted and allows everything, absence
//     included (Kubernetes rejects it in pod specs).
//   - minValues with In is checked against the distinct values, and is
//     rejected with DoesNotExist, which has nothing to count.
//   - An empty node selector term is an error (ErrEmptyTerm), not an empty
//     Requirements; matchFields on metadata.name becomes the pseudo key
//     NodeNameKey, which no node side defines, so such pods are compatible
//     with no NodePool unless the caller marks the key open.
//
// # Wire form
//
// A canonical requirement may need up to three corev1 expressions (e.g.
// "Gt 3, Lt 65, NotIn [7]"); Requirement.NodeSelectorRequirements returns
// them exactly, with Gte/Lte rewritten as Gt/Lt except at the int64 limits.
// Requirement.NodeSelectorRequirement returns the single expression matching
// Operator(), which is looser when more than one is needed.
package requirements
