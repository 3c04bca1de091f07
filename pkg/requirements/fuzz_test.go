package requirements

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

var sentinels = []error{ErrInvalidKey, ErrUnknownOperator, ErrMissingValues, ErrInvalidValues, ErrInvalidMinValues}

// FuzzNew: arbitrary key/operator/values/minValues never panic; failures are
// *Error naming the key; successes agree with the oracle and survive the
// wire round trip.
func FuzzNew(f *testing.F) {
	f.Add("kubernetes.io/arch", "In", "amd64\x00arm64", 0, false)
	f.Add("k", "NotIn", "", 0, false)
	f.Add("k", "Gt", "5", 2, true)
	f.Add("k", "Lte", "-9223372036854775808", 0, false)
	f.Add("k", "Gt", "9223372036854775807", 0, false)
	f.Add("k", "Lt", "abc", 0, false)
	f.Add("k", "Exists", "x", 0, false)
	f.Add("k", "DoesNotExist", "", 1, true)
	f.Add("", "In", "a", 0, false)
	f.Add("a/b/c", "Equals", "a", 0, false)
	f.Add("example.com/team", "In", "a\x00a", 2, true)
	f.Add("k", "In", "a", 51, true)
	f.Fuzz(func(t *testing.T, key, op, joined string, mv int, hasMV bool) {
		var values []string
		if joined != "" {
			values = strings.Split(joined, "\x00")
		}
		orig := slices.Clone(values)
		var minValues *int
		if hasMV {
			minValues = &mv
		}
		r, err := New(key, Operator(op), values, minValues)
		if !slices.Equal(values, orig) {
			t.Fatalf("New modified values: %q -> %q", orig, values)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Key != key || e.Reason == "" || r != nil {
				t.Fatalf("error %v (%T) for key %q", err, err, key)
			}
			if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			_ = e.FieldError(nil)
			return
		}
		if r.Key() != key || r.String() == "" {
			t.Fatalf("New(%q) gave %v", key, r)
		}
		e := expr{Operator(op), values}
		probes := append(slices.Clone(values), "zz", "0", "-1", "05", key, joined)
		for _, v := range probes {
			if got, want := r.Has(v), e.sat(v, true); got != want {
				t.Fatalf("%v Has(%q) = %v, oracle %v", r, v, got, want)
			}
		}
		if got, want := r.AllowsAbsent(), e.sat("", false); got != want {
			t.Fatalf("%v AllowsAbsent() = %v, oracle %v", r, got, want)
		}
		if v, ok := r.Any(); ok && !r.Has(v) {
			t.Fatalf("%v Any() = %q is not allowed", r, v)
		}
		if !r.Satisfiable() {
			return
		}
		var back *Requirement
		for _, x := range r.NodeSelectorRequirements() {
			y, err := FromNodeSelectorRequirement(x)
			if err != nil {
				t.Fatalf("%v printed %v, which does not parse: %v", r, x, err)
			}
			back = back.Intersection(y)
		}
		if !back.Equal(r.WithMinValues(nil)) {
			t.Fatalf("round trip %v -> %v", r, back)
		}
	})
}

// fuzzDecoder turns fuzz bytes into requirements over a small value pool
// plus one arbitrary probe string.
type fuzzDecoder struct {
	data []byte
	pool []string
}

func (d *fuzzDecoder) next() int {
	if len(d.data) == 0 {
		return 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	return int(b)
}

func (d *fuzzDecoder) conj() conj {
	c := make(conj, 1+d.next()%3)
	for i := range c {
		op := validOperators[d.next()%len(validOperators)]
		switch op {
		case In, NotIn:
			n := d.next() % 4
			if op == In {
				n++
			}
			vals := make([]string, n)
			for j := range vals {
				vals[j] = d.pool[d.next()%len(d.pool)]
			}
			c[i] = expr{op, vals}
		case Exists, DoesNotExist:
			c[i] = expr{op: op}
		default:
			bound := strconv.Itoa(int(int8(d.next())))
			if d.next()%16 == 0 {
				bound = d.pool[len(d.pool)-1] // maybe not an integer
			}
			c[i] = expr{op, []string{bound}}
		}
	}
	return c
}

// FuzzIntersection: decoded requirements intersect commutatively, and
// membership in A∩B is membership in both, as the oracle sees it.
func FuzzIntersection(f *testing.F) {
	f.Add([]byte{0, 4, 1, 2, 3, 0, 2, 5, 1, 2, 3}, "a")
	f.Add([]byte{1, 2, 10, 1, 3, 2, 250, 0}, "07")
	f.Add([]byte{2, 5, 4, 1, 6, 3, 0, 1, 5, 200}, "-3")
	f.Add([]byte{0, 3, 0, 7, 0, 4, 1, 0}, "9223372036854775807")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, data []byte, probe string) {
		d := &fuzzDecoder{data: data, pool: append(slices.Clone(genValues), probe)}
		ca, cb := d.conj(), d.conj()
		a, errA := ca.build("k.io/x")
		b, errB := cb.build("k.io/x")
		for _, err := range []error{errA, errB} {
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *Error", err, err)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		ab, ba := a.Intersection(b), b.Intersection(a)
		if !ab.Equal(ba) || ab.String() != ba.String() {
			t.Fatalf("%v ∩ %v: %v vs %v", a, b, ab, ba)
		}
		both := append(slices.Clone(ca), cb...)
		for _, v := range append(slices.Clone(checkUniverse), probe) {
			if got := ab.Has(v); got != (a.Has(v) && b.Has(v)) || got != both.sat(v, true) {
				t.Fatalf("%v ∩ %v = %v: Has(%q) = %v, operands %v/%v, oracle %v", a, b, ab, v, got, a.Has(v), b.Has(v), both.sat(v, true))
			}
		}
		if got := ab.AllowsAbsent(); got != (a.AllowsAbsent() && b.AllowsAbsent()) || got != both.sat("", false) {
			t.Fatalf("%v ∩ %v = %v: AllowsAbsent %v", a, b, ab, got)
		}
		if intersects(a, b) != ab.Satisfiable() {
			t.Fatalf("intersects(%v, %v) = %v, but the intersection is %v", a, b, intersects(a, b), ab)
		}
	})
}

// FuzzParseInt: the allocation-free parser agrees with strconv.ParseInt,
// which is what Kubernetes uses for Gt/Lt.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "+0", "", "+", "-", "12", "007", "-007", "1_0", "0x10", " 1", "1 ",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt(s)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("parseInt(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
		}
	})
}

// FuzzLabelSyntax: the allocation-free key and value checks agree with
// apimachinery's validators.
func FuzzLabelSyntax(f *testing.F) {
	for _, s := range []string{"", "a", "a/b", "a/b/c", "/a", "a/", "A.io/b", "a.io/B", "a..b/c", "-a.io/b", "a-.io/b",
		"a.io/-b", "a.io/b_", "a_b", "a.b", "é", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a/b", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isLabelKey(s), len(content.IsLabelKey(s)) == 0; got != want {
			t.Fatalf("isLabelKey(%q) = %v, apimachinery says %v", s, got, want)
		}
		if got, want := isLabelValue(s), len(content.IsLabelValue(s)) == 0; got != want {
			t.Fatalf("isLabelValue(%q) = %v, apimachinery says %v", s, got, want)
		}
	})
}
