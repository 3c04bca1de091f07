package requirements

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// FieldKeyPrefix starts the pseudo keys under which FromNodeSelectorTerm
// stores matchFields entries. ':' cannot occur in a label key, so a pseudo
// key never collides with a real label.
const FieldKeyPrefix = "field:"

// NodeNameKey is the pseudo key for the only field Kubernetes lets node
// selector terms match, metadata.name. To check such a requirement with
// Matches, put the node's name into the label map under this key.
const NodeNameKey = FieldKeyPrefix + "metadata.name"

// Requirements is a set of requirements keyed by label key, at most one per
// key (adding a second requirement for a key intersects the two), held in a
// slice sorted by key so every output and error order is deterministic.
//
// Requirements is a value: copies are independent, because Add never writes
// to storage a copy may share. The zero value is the empty set, which
// constrains nothing.
type Requirements struct {
	reqs []*Requirement // sorted by key, distinct keys, no nils
}

// NewRequirements returns the set holding rs (nil entries are ignored;
// requirements sharing a key are intersected).
func NewRequirements(rs ...*Requirement) Requirements {
	var out Requirements
	out.Add(rs...)
	return out
}

// FromLabels returns "key In [value]" for every label. It does not validate
// keys or values: labels come from nodes and instance types the API server
// has already checked.
func FromLabels(labels map[string]string) Requirements {
	if len(labels) == 0 {
		return Requirements{}
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Three allocations in all: the structs, the one-value slices and the
	// pointer slice.
	slab := make([]Requirement, len(keys))
	vals := make([]string, len(keys))
	reqs := make([]*Requirement, len(keys))
	for i, k := range keys {
		vals[i] = labels[k]
		slab[i] = Requirement{key: k, values: vals[i : i+1 : i+1]}
		reqs[i] = &slab[i]
	}
	return Requirements{reqs: reqs}
}

// FromNodeSelector returns the requirements of a pod's spec.nodeSelector:
// every entry is "key In [value]", as in FromLabels.
func FromNodeSelector(sel map[string]string) Requirements {
	return FromLabels(sel)
}

// FromNodeSelectorTerm returns the conjunction of one node selector term.
//
// matchExpressions entries go through New, so keys, operators and values are
// validated. matchFields entries are checked as Kubernetes does (only
// metadata.name, only In or NotIn, exactly one value) and stored under the
// pseudo key NodeNameKey; NodeSelectorRequirements and Labels leave pseudo
// keys out. A term with neither list fails with ErrEmptyTerm, because
// Kubernetes lets an empty term match no node, which an empty Requirements
// (matching every node) would get backwards. Errors are *Error with Field
// prefixed by "matchExpressions[i]." or "matchFields[i].".
func FromNodeSelectorTerm(t corev1.NodeSelectorTerm) (Requirements, error) {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return Requirements{}, newError(ErrEmptyTerm, "", nil,
			"node selector term has neither matchExpressions nor matchFields; Kubernetes matches no node with it")
	}
	rs := make([]*Requirement, 0, len(t.MatchExpressions)+len(t.MatchFields))
	for i, e := range t.MatchExpressions {
		if !isLabelKey(e.Key) {
			return Requirements{}, newError(ErrInvalidKey, e.Key, e.Key, labelKeyProblem(e.Key), pathElem{"key", -1}).prefixed("matchExpressions", i)
		}
		r, err := build(e.Key, Operator(e.Operator), e.Values, nil, true)
		if err != nil {
			return Requirements{}, err.prefixed("matchExpressions", i)
		}
		rs = append(rs, r)
	}
	for i, f := range t.MatchFields {
		r, err := fromMatchField(f)
		if err != nil {
			return Requirements{}, err.prefixed("matchFields", i)
		}
		rs = append(rs, r)
	}
	return NewRequirements(rs...), nil
}

func fromMatchField(f corev1.NodeSelectorRequirement) (*Requirement, *Error) {
	if f.Key != "metadata.name" {
		return nil, newError(ErrUnsupportedField, f.Key, f.Key, `only "metadata.name" is supported`, pathElem{"key", -1})
	}
	op := Operator(f.Operator)
	if op != In && op != NotIn {
		return nil, newError(ErrUnsupportedField, f.Key, string(op), fmt.Sprintf("operator %q is not supported, only In and NotIn", op), pathElem{"operator", -1})
	}
	if len(f.Values) != 1 {
		return nil, newError(ErrUnsupportedField, f.Key, f.Values, fmt.Sprintf("needs exactly one value, got %d", len(f.Values)), pathElem{"values", -1})
	}
	r, err := build(NodeNameKey, op, f.Values, nil, false)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Add adds requirements, intersecting any that share a key with one already
// present (minValues becomes the larger). nil entries are ignored. Add
// allocates a fresh backing slice, so copies of rs made before the call are
// unaffected.
func (rs *Requirements) Add(r ...*Requirement) {
	n := 0
	for _, x := range r {
		if x != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	out := make([]*Requirement, len(rs.reqs), len(rs.reqs)+n)
	copy(out, rs.reqs)
	for _, x := range r {
		if x == nil {
			continue
		}
		i, found := slices.BinarySearchFunc(out, x.key, cmpKey)
		if found {
			out[i] = out[i].Intersection(x)
			continue
		}
		out = slices.Insert(out, i, x)
	}
	rs.reqs = out
}

func cmpKey(r *Requirement, key string) int { return strings.Compare(r.key, key) }

// Get returns the requirement for key, or nil when rs does not constrain it
// (nil behaves as "unconstrained" under every *Requirement method).
func (rs Requirements) Get(key string) *Requirement {
	if len(rs.reqs) <= 8 {
		for _, r := range rs.reqs {
			if r.key == key {
				return r
			}
		}
		return nil
	}
	if i, ok := slices.BinarySearchFunc(rs.reqs, key, cmpKey); ok {
		return rs.reqs[i]
	}
	return nil
}

// Equal reports whether rs and o constrain the same keys with Equal
// requirements.
func (rs Requirements) Equal(o Requirements) bool {
	return slices.EqualFunc(rs.reqs, o.reqs, (*Requirement).Equal)
}

// Has reports whether rs holds a requirement for key.
func (rs Requirements) Has(key string) bool { return rs.Get(key) != nil }

// Keys returns the constrained keys, sorted.
func (rs Requirements) Keys() []string {
	keys := make([]string, len(rs.reqs))
	for i, r := range rs.reqs {
		keys[i] = r.key
	}
	return keys
}

// Len returns the number of constrained keys.
func (rs Requirements) Len() int { return len(rs.reqs) }

// All yields the requirements in key order.
func (rs Requirements) All() iter.Seq[*Requirement] {
	return func(yield func(*Requirement) bool) {
		for _, r := range rs.reqs {
			if !yield(r) {
				return
			}
		}
	}
}

// Intersection returns the key-wise intersection of rs and o: keys only one
// side constrains are kept as they are. It shares storage with rs or o when
// possible (safe: requirements are immutable and Add copies).
func (rs Requirements) Intersection(o Requirements) Requirements {
	if len(o.reqs) == 0 {
		return rs
	}
	if len(rs.reqs) == 0 {
		return o
	}
	out := make([]*Requirement, 0, len(rs.reqs)+len(o.reqs))
	i, j := 0, 0
	for i < len(rs.reqs) && j < len(o.reqs) {
		a, b := rs.reqs[i], o.reqs[j]
		switch {
		case a.key == b.key:
			out = append(out, a.Intersection(b))
			i++
			j++
		case a.key < b.key:
			out = append(out, a)
			i++
		default:
			out = append(out, b)
			j++
		}
	}
	out = append(out, rs.reqs[i:]...)
	out = append(out, o.reqs[j:]...)
	return Requirements{reqs: out}
}

// Satisfiable reports whether some node could satisfy every requirement of
// rs on its own.
func (rs Requirements) Satisfiable() bool {
	for _, r := range rs.reqs {
		if !r.Satisfiable() {
			return false
		}
	}
	return true
}

// Labels returns the labels a node satisfying rs must carry with a single
// possible value: every key whose requirement is a one-value finite set.
// Pseudo keys (FieldKeyPrefix) are left out.
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for _, r := range rs.reqs {
		if !r.complement && !r.absent && len(r.values) == 1 && !strings.HasPrefix(r.key, FieldKeyPrefix) {
			out[r.key] = r.values[0]
		}
	}
	return out
}

// NodeSelectorRequirements returns the exact wire form of rs: every
// requirement's expressions (see Requirement.NodeSelectorRequirements), by
// key. Pseudo keys (FieldKeyPrefix) are left out; minValues is not part of
// the corev1 type.
func (rs Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(rs.reqs))
	for _, r := range rs.reqs {
		if strings.HasPrefix(r.key, FieldKeyPrefix) {
			continue
		}
		out = append(out, r.NodeSelectorRequirements()...)
	}
	return out
}

// String renders every requirement in key order, separated by ", ".
func (rs Requirements) String() string {
	parts := make([]string, len(rs.reqs))
	for i, r := range rs.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// HasMinValues reports whether any requirement carries minValues.
func (rs Requirements) HasMinValues() bool {
	for _, r := range rs.reqs {
		if r.minValues > 0 {
			return true
		}
	}
	return false
}

var _ fmt.Stringer = Requirements{}
