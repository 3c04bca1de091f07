package requirements

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sentinel errors. Every error this package returns wraps exactly one of them,
// so callers classify failures with errors.Is and read details with errors.As.
var (
	// ErrInvalidKey: the label key is empty or not a valid qualified name.
	ErrInvalidKey = errors.New("requirements: invalid key")
	// ErrUnknownOperator: the operator is none of Operators().
	ErrUnknownOperator = errors.New("requirements: unknown operator")
	// ErrMissingValues: In (or a matchFields entry) was given no value.
	ErrMissingValues = errors.New("requirements: missing values")
	// ErrInvalidValues: wrong number of values for the operator, a value that
	// is not a label value, or a non-integer for Gt/Lt/Gte/Lte.
	ErrInvalidValues = errors.New("requirements: invalid values")
	// ErrInvalidMinValues: minValues out of 1..50, above the number of
	// distinct In values, or set on DoesNotExist.
	ErrInvalidMinValues = errors.New("requirements: invalid minValues")
	// ErrEmptyTerm: a node selector term with neither matchExpressions nor
	// matchFields (Kubernetes lets such a term match no node at all).
	ErrEmptyTerm = errors.New("requirements: empty node selector term")
	// ErrUnsupportedField: a matchFields entry other than metadata.name
	// In/NotIn with exactly one value.
	ErrUnsupportedField = errors.New("requirements: unsupported matchFields entry")

	// ErrIncompatible is wrapped by every *IncompatibleError.
	ErrIncompatible = errors.New("requirements: incompatible")
	// ErrMinValuesNotMet is wrapped by every *MinValuesError.
	ErrMinValuesNotMet = errors.New("requirements: minValues not met")
)

// Error is a problem with one requirement as written by a user. Key names the
// label key, Field the offending field relative to the requirement
// ("operator", "values[1]", "minValues"; prefixed with
// "matchExpressions[i]." or "matchFields[i]." when it comes from a node
// selector term), and Reason says what is wrong in words a person can act on.
type Error struct {
	Key    string
	Field  string
	Reason string
	// BadValue is the rejected value (a string, []string or int), for
	// FieldError.
	BadValue any
	// Err is the sentinel this error wraps (ErrInvalidKey, ...).
	Err error

	path []pathElem
}

type pathElem struct {
	name  string
	index int // -1: no index
}

func newError(sentinel error, key string, badValue any, reason string, path ...pathElem) *Error {
	e := &Error{Key: key, Reason: reason, BadValue: badValue, Err: sentinel, path: path}
	e.Field = renderPath(path)
	return e
}

func renderPath(p []pathElem) string {
	var b strings.Builder
	for i, el := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(el.name)
		if el.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(el.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// prefixed returns a copy of e whose field path starts with name[index].
func (e *Error) prefixed(name string, index int) *Error {
	c := *e
	c.path = append([]pathElem{{name: name, index: index}}, e.path...)
	c.Field = renderPath(c.path)
	return &c
}

func (e *Error) Error() string {
	if e.Key == "" && e.Field == "" {
		return e.Reason
	}
	if e.Field == "" {
		return fmt.Sprintf("requirement %q: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("requirement %q: %s: %s", e.Key, e.Field, e.Reason)
}

// Unwrap returns the sentinel (ErrInvalidKey, ErrUnknownOperator, ...).
func (e *Error) Unwrap() error { return e.Err }

// FieldError converts e to an apimachinery field error below base (the path
// of the requirement itself, e.g. spec.template.spec.requirements[3]), for
// validators that report field.ErrorList.
func (e *Error) FieldError(base *field.Path) *field.Error {
	p := base
	for _, el := range e.path {
		if p == nil {
			p = field.NewPath(el.name)
		} else {
			p = p.Child(el.name)
		}
		if el.index >= 0 {
			p = p.Index(el.index)
		}
	}
	if p == nil {
		p = field.NewPath("requirement")
	}
	switch {
	case errors.Is(e.Err, ErrUnknownOperator):
		valid := make([]string, len(validOperators))
		for i, op := range validOperators {
			valid[i] = string(op)
		}
		return field.NotSupported(p, e.BadValue, valid)
	case errors.Is(e.Err, ErrMissingValues):
		return field.Required(p, e.Reason)
	default:
		return field.Invalid(p, e.BadValue, e.Reason)
	}
}

// IncompatibleReason classifies why two requirement sets, or a requirement
// set and a node's labels, do not fit together.
type IncompatibleReason string

// The reasons an *IncompatibleError carries.
const (
	// ReasonDisjoint: both sides constrain the key and no value (nor
	// absence) satisfies both.
	ReasonDisjoint IncompatibleReason = "Disjoint"
	// ReasonUndefined: the incoming side needs the label, and the node side
	// neither defines the key nor treats it as open.
	ReasonUndefined IncompatibleReason = "Undefined"
	// ReasonUnsatisfiable: one side's requirement for the key allows nothing
	// at all on its own (e.g. the result of an empty intersection).
	ReasonUnsatisfiable IncompatibleReason = "Unsatisfiable"
	// ReasonLabelMissing: Matches found no label but the requirement needs one.
	ReasonLabelMissing IncompatibleReason = "LabelMissing"
	// ReasonLabelValue: Matches found a label whose value is not allowed
	// (including a present label under DoesNotExist).
	ReasonLabelValue IncompatibleReason = "LabelValue"
)

// IncompatibleError names the first key, in sorted key order, on which
// Compatible or Matches failed. Its message is computed lazily so that
// callers who only test for the error (the scheduling hot path) pay one
// allocation and no string work.
type IncompatibleError struct {
	Key    string
	Reason IncompatibleReason
	// Node is the node-side (receiver) requirement for Key; nil when the
	// node side does not define Key, and for Matches.
	Node *Requirement
	// Incoming is the incoming (argument) requirement for Key; for Matches
	// it is the requirement that the labels fail.
	Incoming *Requirement
	// Value is the label value Matches found, when HasValue.
	Value    string
	HasValue bool

	hintFrom hintSource
}

// hintSource holds what Hint needs. Requirements are immutable, so they are
// kept by reference and scanned lazily; candidates from caller-owned data
// (HintKeys, the labels map) are narrowed to their best one when the error is
// built, so a caller modifying them later cannot race with Hint.
type hintSource struct {
	reqs   []*Requirement
	caller string
}

// callerHint returns the best hint for key among caller-owned candidates.
func callerHint(key string, extra []string, labels map[string]string) string {
	h := newHinter(key)
	for _, k := range extra {
		h.consider(k)
	}
	for k := range labels {
		h.consider(k) // order-independent: ties are broken by key
	}
	return h.best
}

// Unwrap returns ErrIncompatible.
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// Hint returns a known key that Key is probably a typo of, or "" when none is
// close: candidates are the keys the other side defines, the keys the caller
// passed as hints, and the well-known labels (see WellKnownKeys). Only
// ReasonUndefined and ReasonLabelMissing errors carry hints.
func (e *IncompatibleError) Hint() string {
	if e.Reason != ReasonUndefined && e.Reason != ReasonLabelMissing {
		return ""
	}
	h := newHinter(e.Key)
	for _, r := range e.hintFrom.reqs {
		h.consider(r.key)
	}
	h.consider(e.hintFrom.caller)
	for _, k := range wellKnownKeys {
		h.consider(k)
	}
	return h.best
}

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "key %q", e.Key)
	if hint := e.Hint(); hint != "" {
		fmt.Fprintf(&b, " (typo of %q?)", hint)
	}
	b.WriteString(": ")
	switch e.Reason {
	case ReasonDisjoint:
		in, node := e.Incoming, e.Node
		if in.isPlainIn() && node.isPlainIn() && len(in.values) > 0 {
			if len(in.values) == 1 {
				fmt.Fprintf(&b, "%q not in %s", in.values[0], bracket(node.values))
			} else {
				fmt.Fprintf(&b, "none of %s in %s", bracket(in.values), bracket(node.values))
			}
		} else {
			fmt.Fprintf(&b, "incoming %s and node-side %s have no value in common", in.describe(), node.describe())
		}
	case ReasonUndefined:
		fmt.Fprintf(&b, "incoming %s needs the label, but the node side does not define the key", e.Incoming.describe())
	case ReasonUnsatisfiable:
		if e.Node != nil {
			fmt.Fprintf(&b, "node-side %s allows no value", e.Node.describe())
		} else {
			fmt.Fprintf(&b, "incoming %s allows no value", e.Incoming.describe())
		}
	case ReasonLabelMissing:
		fmt.Fprintf(&b, "no such label, but %s needs it", e.Incoming.describe())
	case ReasonLabelValue:
		if e.Incoming.isPlainIn() {
			fmt.Fprintf(&b, "label value %q not in %s", e.Value, bracket(e.Incoming.values))
		} else {
			fmt.Fprintf(&b, "label value %q not allowed by %s", e.Value, e.Incoming.describe())
		}
	default:
		b.WriteString(string(e.Reason))
	}
	return b.String()
}

// MinValuesError names the first key, in sorted order, whose minValues is
// not met by the values still available.
type MinValuesError struct {
	Key       string
	MinValues int
	Available int
}

// Unwrap returns ErrMinValuesNotMet.
func (e *MinValuesError) Unwrap() error { return ErrMinValuesNotMet }

func (e *MinValuesError) Error() string {
	return fmt.Sprintf("key %q: minValues %d not met, only %d distinct value(s) remain", e.Key, e.MinValues, e.Available)
}

var (
	_ error = (*Error)(nil)
	_ error = (*IncompatibleError)(nil)
	_ error = (*MinValuesError)(nil)
)
