package requirements

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"pgregory.net/rapid"
)

// This file holds an independent brute-force model of requirement semantics:
// a requirement is a conjunction of raw (operator, values) expressions,
// evaluated one label value at a time straight from the operator
// definitions, with strconv.ParseInt for integer comparisons. It shares no
// code with the package's canonical form.

// expr is one raw expression.
type expr struct {
	op   Operator
	vals []string
}

func (e expr) String() string { return fmt.Sprintf("%s %v", e.op, e.vals) }

// sat reports whether a label with value v (present) or no label (!present)
// satisfies e.
func (e expr) sat(v string, present bool) bool {
	switch e.op {
	case In:
		return present && slices.Contains(e.vals, v)
	case NotIn:
		return !present || !slices.Contains(e.vals, v)
	case Exists:
		return present
	case DoesNotExist:
		return !present
	}
	if !present {
		return false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	bound, err := strconv.ParseInt(e.vals[0], 10, 64)
	if err != nil {
		panic("oracle: bad bound " + e.vals[0])
	}
	switch e.op {
	case Gt:
		return n > bound
	case Lt:
		return n < bound
	case Gte:
		return n >= bound
	case Lte:
		return n <= bound
	}
	panic("oracle: unknown operator " + string(e.op))
}

// conj is a conjunction of expressions on one key; the empty conjunction is
// unconstrained.
type conj []expr

func (c conj) sat(v string, present bool) bool {
	for _, e := range c {
		if !e.sat(v, present) {
			return false
		}
	}
	return true
}

// genValues are the values generated In/NotIn requirements mention: valid
// label values only (a label value cannot start with '-', so negative
// integers appear only as bounds and as probed label values).
var genValues = []string{"0", "1", "2", "3", "4", "5", "05", "6", "7", "8", "9", "10", "11", "12", "a", "b", "c", "d", "e"}

// checkUniverse is every value the oracle evaluates: genValues plus values no
// generated requirement mentions ("zz", "", and canonical, zero-padded and
// signed spellings of every integer near the generated bounds). Any complement therefore has a witness here, so
// "some string satisfies it" is decided exactly on this finite universe.
var checkUniverse = func() []string {
	u := slices.Clone(genValues)
	u = append(u, "zz", "")
	for n := -7; n <= 16; n++ {
		u = append(u, strconv.Itoa(n))
		if n < 0 {
			u = append(u, "-0"+strconv.Itoa(-n), "-00"+strconv.Itoa(-n))
		} else {
			u = append(u, "0"+strconv.Itoa(n), "00"+strconv.Itoa(n), "+"+strconv.Itoa(n))
		}
	}
	slices.Sort(u)
	return slices.Compact(u)
}()

// someSat reports whether some value of the check universe, or absence,
// satisfies every predicate.
func someSat(preds ...func(v string, present bool) bool) bool {
	all := func(v string, present bool) bool {
		for _, p := range preds {
			if !p(v, present) {
				return false
			}
		}
		return true
	}
	if all("", false) {
		return true
	}
	for _, v := range checkUniverse {
		if all(v, true) {
			return true
		}
	}
	return false
}

// exprSpace is what expressions are drawn from.
type exprSpace struct {
	values   []string // In/NotIn values
	lo, hi   int      // bounds for Gt/Lt/Gte/Lte
	maxExprs int
}

var defaultSpace = exprSpace{values: genValues, lo: -5, hi: 14, maxExprs: 3}

// genExpr draws one valid expression.
func (sp exprSpace) genExpr(t *rapid.T, label string) expr {
	op := rapid.SampledFrom(validOperators).Draw(t, label+".op")
	switch op {
	case In:
		return expr{op, rapid.SliceOfN(rapid.SampledFrom(sp.values), 1, 4).Draw(t, label+".vals")}
	case NotIn:
		return expr{op, rapid.SliceOfN(rapid.SampledFrom(sp.values), 0, 4).Draw(t, label+".vals")}
	case Exists, DoesNotExist:
		return expr{op: op}
	default:
		return expr{op, []string{strconv.Itoa(rapid.IntRange(sp.lo, sp.hi).Draw(t, label+".bound"))}}
	}
}

// genConj draws 1..maxExprs expressions.
func (sp exprSpace) genConj(t *rapid.T, label string) conj {
	n := rapid.IntRange(1, sp.maxExprs).Draw(t, label+".n")
	c := make(conj, n)
	for i := range c {
		c[i] = sp.genExpr(t, fmt.Sprintf("%s[%d]", label, i))
	}
	return c
}

func genConj(t *rapid.T, label string) conj { return defaultSpace.genConj(t, label) }

// build turns a conjunction into a Requirement through New and Intersection.
func (c conj) build(key string) (*Requirement, error) {
	var r *Requirement
	for _, e := range c {
		x, err := New(key, e.op, e.vals, nil)
		if err != nil {
			return nil, err
		}
		r = r.Intersection(x)
	}
	return r, nil
}

func (c conj) mustBuild(t *rapid.T, key string) *Requirement {
	r, err := c.build(key)
	if err != nil {
		t.Fatalf("building %v: %v", c, err)
	}
	return r
}

// agree fails t unless r and c allow exactly the same labels on the check
// universe.
func agree(t *rapid.T, what string, r *Requirement, c conj) {
	if got, want := r.AllowsAbsent(), c.sat("", false); got != want {
		t.Fatalf("%s: %v AllowsAbsent() = %v, oracle %v says %v", what, r, got, c, want)
	}
	for _, v := range checkUniverse {
		if got, want := r.Has(v), c.sat(v, true); got != want {
			t.Fatalf("%s: %v Has(%q) = %v, oracle %v says %v", what, r, v, got, c, want)
		}
	}
}

// keyed is a multi-key oracle requirement set.
type keyed map[string]conj

func (k keyed) keys() []string {
	out := make([]string, 0, len(k))
	for key := range k {
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

var genKeys = []string{"k.io/a", "k.io/b", "k.io/c", "k.io/d"}

func genKeyed(t *rapid.T, label string) keyed {
	out := keyed{}
	for _, key := range genKeys {
		if rapid.Bool().Draw(t, label+"."+key+"?") {
			out[key] = genConj(t, label+"."+key)
		}
	}
	return out
}

func (k keyed) build(t *rapid.T) Requirements {
	var rs Requirements
	// Add in a drawn order to check the result does not depend on it.
	keys := rapid.Permutation(k.keys()).Draw(t, "addOrder")
	for _, key := range keys {
		rs.Add(k[key].mustBuild(t, key))
	}
	return rs
}

func (k keyed) String() string {
	var b strings.Builder
	for _, key := range k.keys() {
		fmt.Fprintf(&b, "%s:%v ", key, k[key])
	}
	return b.String()
}

// oracleCanonical rebuilds, from nothing but the oracle's verdicts on the
// check universe, an expression list for the same set as c, in the canonical
// shape the package documents: finite values, or a complement that is
// unbounded (a fresh non-integer "zz" is allowed) or bounded (fresh padded
// integers "00n" mark the bounds), with its exclusions. Values in c must come
// from genValues and bounds from -5..14.
func oracleCanonical(c conj) conj {
	absent := c.sat("", false)
	padded := func(n int) string {
		if n < 0 {
			return "-00" + strconv.Itoa(-n)
		}
		return "00" + strconv.Itoa(n)
	}
	switch {
	case c.sat("zz", true):
		var excl []string
		for _, v := range genValues {
			if !c.sat(v, true) {
				excl = append(excl, v)
			}
		}
		if absent {
			return conj{{NotIn, excl}}
		}
		out := conj{{op: Exists}}
		if len(excl) > 0 {
			out = append(out, expr{NotIn, excl})
		}
		return out
	case slices.ContainsFunc([]int{-7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		func(n int) bool { return c.sat(padded(n), true) }):
		lo, hi := 100, -100
		for n := -7; n <= 16; n++ {
			if c.sat(padded(n), true) {
				lo, hi = min(lo, n), max(hi, n)
			}
		}
		var out conj
		if lo > -7 {
			out = append(out, expr{Gte, []string{strconv.Itoa(lo)}})
		}
		if hi < 16 {
			out = append(out, expr{Lte, []string{strconv.Itoa(hi)}})
		}
		var excl []string
		for _, v := range genValues {
			if n, err := strconv.Atoi(v); err == nil && n >= lo && n <= hi && !c.sat(v, true) {
				excl = append(excl, v)
			}
		}
		if len(excl) > 0 {
			out = append(out, expr{NotIn, excl})
		}
		return out
	default:
		var vals []string
		for _, v := range genValues {
			if c.sat(v, true) {
				vals = append(vals, v)
			}
		}
		switch {
		case len(vals) > 0:
			return conj{{In, vals}}
		case absent:
			return conj{{op: DoesNotExist}}
		default: // unsatisfiable
			return conj{{Exists, nil}, {op: DoesNotExist}}
		}
	}
}
