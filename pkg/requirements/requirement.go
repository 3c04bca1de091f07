package requirements

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Bounds on minValues, as in the Karpenter v1 API.
const (
	MinValuesMin = 1
	MinValuesMax = 50
)

// Requirement is the set of values allowed for one label key, held in one
// canonical form, plus an optional minValues.
//
// The set lives over all strings plus "absent" (the node has no such label).
// It is either
//   - finite: exactly the listed values (In; an empty list is DoesNotExist
//     when absence is allowed and unsatisfiable otherwise), or
//   - a complement: every string except the listed ones, optionally narrowed
//     to integers within inclusive bounds (NotIn, Exists, Gt, Lt, Gte, Lte).
//
// Canonical means two requirements allow the same values exactly when their
// fields are equal, so String and Operator are functions of the set alone.
//
// A *Requirement is immutable once built and safe to share between
// goroutines. A nil *Requirement means "unconstrained": every value and
// absence are allowed.
type Requirement struct {
	key string
	// values is sorted and distinct. Finite: the allowed values. Complement:
	// the excluded values; when bounded, only excluded strings that are
	// integers within the bounds are kept.
	values       []string
	lower, upper int64 // inclusive; meaningful when hasLower / hasUpper
	minValues    int   // 0: none
	complement   bool
	absent       bool // a node without the label satisfies the requirement
	hasLower     bool
	hasUpper     bool
}

// New builds the requirement "key op values" with an optional minValues. It
// never modifies values. Errors are *Error values naming the key, the field
// and the reason, and wrap one of ErrInvalidKey, ErrUnknownOperator,
// ErrMissingValues, ErrInvalidValues or ErrInvalidMinValues:
//   - the key must be a valid label key;
//   - In needs at least one value; NotIn may have none (then it allows
//     everything); In and NotIn values must be valid label values;
//   - Exists and DoesNotExist take no values;
//   - Gt, Lt, Gte and Lte take exactly one base-10 int64 value;
//   - minValues must be within 1..50, at most the number of distinct values
//     with In, and is rejected with DoesNotExist (nothing to count).
func New(key string, op Operator, values []string, minValues *int) (*Requirement, error) {
	if !isLabelKey(key) {
		return nil, newError(ErrInvalidKey, key, key, labelKeyProblem(key), pathElem{"key", -1})
	}
	r, err := build(key, op, values, minValues, true)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// MustNew is New for constants and tests; it panics on error.
func MustNew(key string, op Operator, values []string, minValues *int) *Requirement {
	r, err := New(key, op, values, minValues)
	if err != nil {
		panic(err)
	}
	return r
}

// FromNodeSelectorRequirement builds a requirement from its corev1 form.
func FromNodeSelectorRequirement(r corev1.NodeSelectorRequirement) (*Requirement, error) {
	return New(r.Key, Operator(r.Operator), r.Values, nil)
}

// build checks everything but the key and returns the canonical requirement.
func build(key string, op Operator, values []string, minValues *int, checkLabelValues bool) (*Requirement, *Error) {
	valuesPath := pathElem{"values", -1}
	checkValues := func() *Error {
		if !checkLabelValues {
			return nil
		}
		for i, v := range values {
			if !isLabelValue(v) {
				return newError(ErrInvalidValues, key, v, fmt.Sprintf("%q %s", v, labelValueProblem(v)), pathElem{"values", i})
			}
		}
		return nil
	}
	var r Requirement
	switch op {
	case In:
		if len(values) == 0 {
			return nil, newError(ErrMissingValues, key, values, "operator In needs at least one value", valuesPath)
		}
		if err := checkValues(); err != nil {
			return nil, err
		}
		r = Requirement{key: key, values: sortedDistinct(values)}
	case NotIn:
		if err := checkValues(); err != nil {
			return nil, err
		}
		r = Requirement{key: key, values: sortedDistinct(values), complement: true, absent: true}
	case Exists, DoesNotExist:
		if len(values) != 0 {
			return nil, newError(ErrInvalidValues, key, values, fmt.Sprintf("operator %s takes no values, got %d", op, len(values)), valuesPath)
		}
		r = Requirement{key: key, complement: op == Exists, absent: op == DoesNotExist}
	case Gt, Lt, Gte, Lte:
		if len(values) != 1 {
			return nil, newError(ErrInvalidValues, key, values, fmt.Sprintf("operator %s needs exactly one integer value, got %d values", op, len(values)), valuesPath)
		}
		n, ok := parseInt(values[0])
		if !ok {
			return nil, newError(ErrInvalidValues, key, values[0], fmt.Sprintf("operator %s needs an integer value, got %q", op, values[0]), pathElem{"values", 0})
		}
		lo, hi := int64(0), int64(0)
		hasLo, hasHi := false, false
		switch op {
		case Gt:
			if n == math.MaxInt64 {
				r = Requirement{key: key} // no int64 is greater: unsatisfiable
				break
			}
			lo, hasLo = n+1, true
		case Gte:
			lo, hasLo = n, true
		case Lt:
			if n == math.MinInt64 {
				r = Requirement{key: key}
				break
			}
			hi, hasHi = n-1, true
		case Lte:
			hi, hasHi = n, true
		}
		if hasLo || hasHi {
			r = makeComplement(key, nil, lo, hi, hasLo, hasHi, false, 0)
		}
	default:
		return nil, newError(ErrUnknownOperator, key, string(op), fmt.Sprintf("unknown operator %q; valid operators: %s", op, joinOperators()), pathElem{"operator", -1})
	}
	if minValues != nil {
		mv := *minValues
		mvPath := pathElem{"minValues", -1}
		switch {
		case mv < MinValuesMin || mv > MinValuesMax:
			return nil, newError(ErrInvalidMinValues, key, mv, fmt.Sprintf("must be between %d and %d, got %d", MinValuesMin, MinValuesMax, mv), mvPath)
		case op == In && mv > len(r.values):
			return nil, newError(ErrInvalidMinValues, key, mv, fmt.Sprintf("%d exceeds the %d distinct value(s) listed for operator In", mv, len(r.values)), mvPath)
		case op == DoesNotExist:
			return nil, newError(ErrInvalidMinValues, key, mv, "cannot be used with operator DoesNotExist, which allows no value", mvPath)
		}
		r.minValues = mv
	}
	return &r, nil
}

func joinOperators() string {
	s := make([]string, len(validOperators))
	for i, op := range validOperators {
		s[i] = string(op)
	}
	return strings.Join(s, ", ")
}

// makeComplement returns the canonical complement "every string except excl,
// narrowed to integers in the bounds". Empty bounds give the empty finite
// set; exclusions outside the bounds are dropped (copying excl only then).
func makeComplement(key string, excl []string, lo, hi int64, hasLo, hasHi, absent bool, mv int) Requirement {
	if hasLo && hasHi && lo > hi {
		return Requirement{key: key, absent: absent, minValues: mv}
	}
	r := Requirement{key: key, values: excl, lower: lo, upper: hi, hasLower: hasLo, hasUpper: hasHi, complement: true, absent: absent, minValues: mv}
	if !hasLo && !hasHi {
		return r
	}
	keep := 0
	for _, v := range excl {
		if r.inBounds(v) {
			keep++
		}
	}
	if keep == len(excl) {
		return r
	}
	if keep == 0 {
		r.values = nil
		return r
	}
	kept := make([]string, 0, keep)
	for _, v := range excl {
		if r.inBounds(v) {
			kept = append(kept, v)
		}
	}
	r.values = kept
	return r
}

// inBounds reports whether v passes the integer bounds (true when unbounded).
func (r *Requirement) inBounds(v string) bool {
	if !r.hasLower && !r.hasUpper {
		return true
	}
	n, ok := parseInt(v)
	if !ok {
		return false
	}
	return (!r.hasLower || n >= r.lower) && (!r.hasUpper || n <= r.upper)
}

// Key returns the label key ("" for nil).
func (r *Requirement) Key() string {
	if r == nil {
		return ""
	}
	return r.key
}

// Has reports whether a node whose label has this value satisfies r. For
// finite sets of up to 8 values it scans linearly; it never allocates.
// Bounds compare values as base-10 integers; a value that is not an integer
// is never inside bounds.
func (r *Requirement) Has(value string) bool {
	if r == nil {
		return true
	}
	if !r.complement {
		return contains(r.values, value)
	}
	return r.inBounds(value) && !contains(r.values, value)
}

// AllowsAbsent reports whether a node without the label satisfies r (NotIn
// and DoesNotExist do; In, Exists and the integer comparisons do not).
func (r *Requirement) AllowsAbsent() bool {
	return r == nil || r.absent
}

// Satisfiable reports whether some node satisfies r: it allows a value or
// absence. Only an empty intersection (or Gt of the largest int64, Lt of the
// smallest) is unsatisfiable.
func (r *Requirement) Satisfiable() bool {
	return r == nil || r.complement || r.absent || len(r.values) > 0
}

// Len returns the number of allowed values: math.MaxInt for complements
// (bounded ones included: "6", "06", "+6" are distinct strings), 0 for
// DoesNotExist and unsatisfiable requirements.
func (r *Requirement) Len() int {
	if r == nil || r.complement {
		return math.MaxInt
	}
	return len(r.values)
}

// IsFinite reports whether r allows finitely many values, i.e. Values lists
// them all.
func (r *Requirement) IsFinite() bool {
	return r != nil && !r.complement
}

// Values returns a fresh sorted slice of the allowed values of a finite set,
// and nil for complements.
func (r *Requirement) Values() []string {
	if r == nil || r.complement || len(r.values) == 0 {
		return nil
	}
	return slices.Clone(r.values)
}

// Any returns a deterministic allowed value and true, or "" and false when r
// allows no value (DoesNotExist, unsatisfiable). For finite sets it is the
// smallest value. For complements it is the first decimal integer not
// excluded, walking up from the lower bound, or down from min(0, upper
// bound), or up from 0 when unbounded; if every integer in the bounds is
// excluded it zero-pads one ("06"), which Gt/Lt still read as 6.
func (r *Requirement) Any() (string, bool) {
	if r == nil {
		return "0", true
	}
	if !r.complement {
		if len(r.values) == 0 {
			return "", false
		}
		return r.values[0], true
	}
	start, step := int64(0), int64(1)
	switch {
	case r.hasLower:
		start = r.lower
	case r.hasUpper:
		start, step = min(0, r.upper), -1
	}
	// At most len(values) integers are excluded, so one of the first
	// len(values)+1 candidates is free unless the bounds run out first.
	n := start
	for range len(r.values) + 1 {
		if s := strconv.FormatInt(n, 10); !contains(r.values, s) {
			return s, true
		}
		if (step > 0 && (n == math.MaxInt64 || (r.hasUpper && n >= r.upper))) ||
			(step < 0 && n == math.MinInt64) {
			break
		}
		n += step
	}
	digits := strconv.FormatInt(start, 10)
	sign := ""
	if start < 0 {
		sign, digits = "-", digits[1:]
	}
	for pad := 1; ; pad++ {
		if s := sign + strings.Repeat("0", pad) + digits; !contains(r.values, s) {
			return s, true
		}
	}
}

// MinValues returns a copy of r's minValues, or nil when it has none.
func (r *Requirement) MinValues() *int {
	if r == nil || r.minValues == 0 {
		return nil
	}
	mv := r.minValues
	return &mv
}

// WithMinValues returns a copy of r with minValues replaced (nil removes
// it); nil stays nil. It does not validate the number; New does.
func (r *Requirement) WithMinValues(minValues *int) *Requirement {
	if r == nil {
		return nil
	}
	c := *r
	c.minValues = 0
	if minValues != nil {
		c.minValues = *minValues
	}
	return &c
}

// isPlainIn reports whether r is a finite set of values that needs the label.
func (r *Requirement) isPlainIn() bool {
	return r != nil && !r.complement && !r.absent
}

// Operator returns the canonical operator: In for finite sets (an empty one
// is unsatisfiable), DoesNotExist, NotIn for complements that allow absence,
// Exists, and for bounded sets Gt/Lt (Gte/Lte only where Gt/Lt would
// overflow int64), the lower bound first. A complement that needs the label
// and excludes values without bounds reports NotIn. nil reports NotIn.
func (r *Requirement) Operator() Operator {
	switch {
	case r == nil:
		return NotIn
	case !r.complement:
		if r.absent && len(r.values) == 0 {
			return DoesNotExist
		}
		return In
	case r.absent:
		return NotIn
	case r.hasLower:
		if r.lower == math.MinInt64 {
			return Gte
		}
		return Gt
	case r.hasUpper:
		if r.upper == math.MaxInt64 {
			return Lte
		}
		return Lt
	case len(r.values) > 0:
		return NotIn
	default:
		return Exists
	}
}

// NodeSelectorRequirements returns the exact wire form of r as the
// conjunction of one to three expressions, in this order: a lower bound (Gt,
// or Gte at the int64 minimum), an upper bound (Lt, or Lte at the maximum),
// Exists (only when unbounded and the label is needed), NotIn. The finite set
// is "In values" (an empty In, which the Kubernetes API rejects, is how an
// unsatisfiable requirement prints). nil returns nil.
func (r *Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	if r == nil {
		return nil
	}
	var out []corev1.NodeSelectorRequirement
	r.eachExpression(func(op Operator, values []string) {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.key, Operator: op.NodeSelectorOperator(), Values: values})
	})
	return out
}

// NodeSelectorRequirement returns the single expression whose operator is
// Operator(). It is exact whenever NodeSelectorRequirements has one element;
// otherwise it is looser than r (use NodeSelectorRequirements for the exact
// form): a bounded set keeps only its lower bound, and "needs the label,
// excludes values" becomes NotIn, which also admits absence.
func (r *Requirement) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	if r == nil {
		return corev1.NodeSelectorRequirement{Operator: corev1.NodeSelectorOpNotIn}
	}
	want := r.Operator()
	var res corev1.NodeSelectorRequirement
	found := false
	r.eachExpression(func(op Operator, values []string) {
		if !found && op == want {
			res = corev1.NodeSelectorRequirement{Key: r.key, Operator: op.NodeSelectorOperator(), Values: values}
			found = true
		}
	})
	return res
}

// eachExpression yields the exact expression list described on
// NodeSelectorRequirements. Each values slice is fresh.
func (r *Requirement) eachExpression(yield func(op Operator, values []string)) {
	switch {
	case !r.complement:
		if r.absent && len(r.values) == 0 {
			yield(DoesNotExist, nil)
			return
		}
		yield(In, slices.Clone(r.values))
		return
	case r.absent:
		yield(NotIn, slices.Clone(r.values))
		return
	}
	if r.hasLower {
		if r.lower == math.MinInt64 {
			yield(Gte, []string{strconv.FormatInt(r.lower, 10)})
		} else {
			yield(Gt, []string{strconv.FormatInt(r.lower-1, 10)})
		}
	}
	if r.hasUpper {
		if r.upper == math.MaxInt64 {
			yield(Lte, []string{strconv.FormatInt(r.upper, 10)})
		} else {
			yield(Lt, []string{strconv.FormatInt(r.upper+1, 10)})
		}
	}
	if !r.hasLower && !r.hasUpper {
		yield(Exists, nil)
	}
	if len(r.values) > 0 {
		yield(NotIn, slices.Clone(r.values))
	}
}

// String renders r as "key" followed by its exact expressions and
// minValues, e.g. `kubernetes.io/arch In [amd64 arm64]`,
// `karpenter.k8s.aws/instance-cpu Gt 3 Lt 65 NotIn [7]`,
// `karpenter.k8s.aws/instance-family Exists minValues 5`. Equal sets render
// equally.
func (r *Requirement) String() string {
	if r == nil {
		return "<unconstrained>"
	}
	var b strings.Builder
	b.WriteString(r.key)
	b.WriteByte(' ')
	r.writeBody(&b)
	return b.String()
}

// describe renders r without its key, for error messages.
func (r *Requirement) describe() string {
	if r == nil {
		return "<unconstrained>"
	}
	var b strings.Builder
	r.writeBody(&b)
	return b.String()
}

func (r *Requirement) writeBody(b *strings.Builder) {
	first := true
	r.eachExpression(func(op Operator, values []string) {
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(string(op))
		switch op {
		case In, NotIn:
			b.WriteByte(' ')
			b.WriteString(bracket(values))
		case Gt, Lt, Gte, Lte:
			b.WriteByte(' ')
			b.WriteString(values[0])
		}
	})
	if r.minValues > 0 {
		b.WriteString(" minValues ")
		b.WriteString(strconv.Itoa(r.minValues))
	}
}

func bracket(values []string) string {
	return "[" + strings.Join(values, " ") + "]"
}

// Intersection returns the requirement allowing exactly what both r and o
// allow (absence only if both allow it), with the larger minValues. The key
// is r's; callers intersect requirements of the same key (o's key is
// ignored). nil is unconstrained, so r.Intersection(nil) is r. When the
// result equals r or o, that pointer is returned and nothing is allocated.
func (r *Requirement) Intersection(o *Requirement) *Requirement {
	switch {
	case r == nil && o == nil:
		return nil
	case r == nil:
		return o
	case o == nil:
		return r
	}
	res := intersect(r, o)
	if res.equal(r) {
		return r
	}
	if res.equal(o) {
		return o
	}
	p := new(Requirement) // a separate allocation keeps res on the stack
	*p = res
	return p
}

func intersect(r, o *Requirement) Requirement {
	mv := max(r.minValues, o.minValues)
	absent := r.absent && o.absent
	switch {
	case !r.complement && !o.complement:
		return Requirement{key: r.key, values: intersectSorted(r.values, o.values), absent: absent, minValues: mv}
	case !r.complement:
		return Requirement{key: r.key, values: filterAllowed(r.values, o), absent: absent, minValues: mv}
	case !o.complement:
		return Requirement{key: r.key, values: filterAllowed(o.values, r), absent: absent, minValues: mv}
	}
	lo, hasLo := r.lower, r.hasLower
	if o.hasLower && (!hasLo || o.lower > lo) {
		lo, hasLo = o.lower, true
	}
	hi, hasHi := r.upper, r.hasUpper
	if o.hasUpper && (!hasHi || o.upper < hi) {
		hi, hasHi = o.upper, true
	}
	return makeComplement(r.key, unionSorted(r.values, o.values), lo, hi, hasLo, hasHi, absent, mv)
}

// equal reports whether r and o hold the same canonical fields.
func (r *Requirement) equal(o *Requirement) bool {
	return r.key == o.key && r.complement == o.complement && r.absent == o.absent &&
		r.hasLower == o.hasLower && r.hasUpper == o.hasUpper &&
		(!r.hasLower || r.lower == o.lower) && (!r.hasUpper || r.upper == o.upper) &&
		r.minValues == o.minValues && slices.Equal(r.values, o.values)
}

// Equal reports whether r and o allow the same values and absence and carry
// the same key and minValues.
func (r *Requirement) Equal(o *Requirement) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.equal(o)
}

// intersectSorted returns the common elements of two sorted sets, reusing a
// or b when one contains the other.
func intersectSorted(a, b []string) []string {
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	switch common {
	case 0:
		return nil
	case len(a):
		return a
	case len(b):
		return b
	}
	out := make([]string, 0, common)
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

// unionSorted returns the union of two sorted sets, reusing a or b when one
// contains the other.
func unionSorted(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	common := len(intersectSorted(a, b))
	switch common {
	case len(b):
		return a
	case len(a):
		return b
	}
	out := make([]string, 0, len(a)+len(b)-common)
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		default:
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// filterAllowed returns the values of vs that c allows, reusing vs when all are.
func filterAllowed(vs []string, c *Requirement) []string {
	keep := 0
	for _, v := range vs {
		if c.Has(v) {
			keep++
		}
	}
	switch keep {
	case len(vs):
		return vs
	case 0:
		return nil
	}
	out := make([]string, 0, keep)
	for _, v := range vs {
		if c.Has(v) {
			out = append(out, v)
		}
	}
	return out
}

// Intersects reports whether some node satisfies both r and o: they share a
// value, or both allow absence. It equals r.Intersection(o).Satisfiable()
// but never allocates. nil is unconstrained.
func (r *Requirement) Intersects(o *Requirement) bool {
	switch {
	case r == nil:
		return o.Satisfiable()
	case o == nil:
		return r.Satisfiable()
	}
	return intersects(r, o)
}

// intersects reports, without allocating, whether some node satisfies both
// r and o: a common value, or absence allowed by both.
func intersects(r, o *Requirement) bool {
	if r.absent && o.absent {
		return true
	}
	switch {
	case !r.complement && !o.complement:
		for i, j := 0, 0; i < len(r.values) && j < len(o.values); {
			switch {
			case r.values[i] == o.values[j]:
				return true
			case r.values[i] < o.values[j]:
				i++
			default:
				j++
			}
		}
		return false
	case !r.complement:
		return anyAllowed(r.values, o)
	case !o.complement:
		return anyAllowed(o.values, r)
	}
	// Two complements: each integer in the common bounds has infinitely many
	// spellings ("6", "06", ...) and only finitely many are excluded, so the
	// intersection is empty only when the bounds are.
	lo, hasLo := r.lower, r.hasLower
	if o.hasLower && (!hasLo || o.lower > lo) {
		lo, hasLo = o.lower, true
	}
	hi, hasHi := r.upper, r.hasUpper
	if o.hasUpper && (!hasHi || o.upper < hi) {
		hi, hasHi = o.upper, true
	}
	return !hasLo || !hasHi || lo <= hi
}

func anyAllowed(vs []string, c *Requirement) bool {
	for _, v := range vs {
		if c.Has(v) {
			return true
		}
	}
	return false
}

var _ fmt.Stringer = (*Requirement)(nil)
