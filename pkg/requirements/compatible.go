package requirements

// CompatibleOptions tunes CompatibleWith.
type CompatibleOptions struct {
	// OpenKeys reports keys that the node side leaves undefined but may still
	// define later, typically well-known labels the cloud provider fills in
	// from the instance type it picks (WellKnownKey is such a predicate). For
	// an open key the node side counts as "any value, or none", so only an
	// unsatisfiable incoming requirement fails. nil: no key is open.
	OpenKeys func(key string) bool
	// HintKeys are extra keys to suggest in "(typo of %q?)" hints, besides
	// the node side's own keys and WellKnownKeys.
	HintKeys []string
}

// Compatible reports whether some node could satisfy both rs (the node side:
// a NodePool, a NodeClaim, an instance type) and o (the incoming side: a pod's
// requirements). It returns nil or an *IncompatibleError for the first
// failing key in sorted order. It is CompatibleWith with no open keys:
//   - a key both sides constrain must intersect: a common value, or both
//     allow absence (NotIn / DoesNotExist on each side);
//   - a key only rs constrains must be satisfiable on its own;
//   - a key only o constrains is undefined on the node side, which will not
//     carry the label, so o must allow absence (NotIn / DoesNotExist).
//
// On success it does not allocate.
func (rs Requirements) Compatible(o Requirements) error {
	return rs.CompatibleWith(o, CompatibleOptions{})
}

// CompatibleWith is Compatible with a policy for keys the node side leaves
// undefined; see CompatibleOptions.
func (rs Requirements) CompatibleWith(o Requirements, opts CompatibleOptions) error {
	a, b := rs.reqs, o.reqs
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].key < b[j].key):
			if !a[i].Satisfiable() {
				return &IncompatibleError{Key: a[i].key, Reason: ReasonUnsatisfiable, Node: a[i]}
			}
			i++
		case i == len(a) || b[j].key < a[i].key:
			in := b[j]
			if opts.OpenKeys != nil && opts.OpenKeys(in.key) {
				if !in.Satisfiable() {
					return &IncompatibleError{Key: in.key, Reason: ReasonUnsatisfiable, Incoming: in}
				}
			} else if !in.absent {
				return &IncompatibleError{Key: in.key, Reason: ReasonUndefined, Incoming: in,
					hintFrom: hintSource{reqs: a, caller: callerHint(in.key, opts.HintKeys, nil)}}
			}
			j++
		default:
			if !intersects(a[i], b[j]) {
				return &IncompatibleError{Key: a[i].key, Reason: ReasonDisjoint, Node: a[i], Incoming: b[j]}
			}
			i++
			j++
		}
	}
	return nil
}

// Matches reports whether a node carrying exactly these labels satisfies
// every requirement of rs: nil, or an *IncompatibleError for the first
// failing key in sorted order (a missing label gets a typo hint from the
// label keys present). Labels rs does not mention do not matter. On success
// it does not allocate.
func (rs Requirements) Matches(labels map[string]string) error {
	for _, r := range rs.reqs {
		v, ok := labels[r.key]
		switch {
		case !ok && !r.absent:
			return &IncompatibleError{Key: r.key, Reason: ReasonLabelMissing, Incoming: r,
				hintFrom: hintSource{caller: callerHint(r.key, nil, labels)}}
		case ok && !r.Has(v):
			return &IncompatibleError{Key: r.key, Reason: ReasonLabelValue, Incoming: r, Value: v, HasValue: true}
		}
	}
	return nil
}
