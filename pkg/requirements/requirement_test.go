package requirements

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func intp(i int) *int { return &i }

const (
	maxI = "9223372036854775807"
	minI = "-9223372036854775808"
)

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name      string
		key       string
		op        Operator
		values    []string
		minValues *int
		sentinel  error
		field     string
	}{
		{"empty key", "", In, []string{"a"}, nil, ErrInvalidKey, "key"},
		{"two slashes", "a.io/b/c", In, []string{"a"}, nil, ErrInvalidKey, "key"},
		{"uppercase prefix", "Example.com/x", Exists, nil, nil, ErrInvalidKey, "key"},
		{"empty prefix", "/x", Exists, nil, nil, ErrInvalidKey, "key"},
		{"name too long", "x/" + strings.Repeat("a", 64), Exists, nil, nil, ErrInvalidKey, "key"},
		{"unknown operator", "k", "Equals", []string{"a"}, nil, ErrUnknownOperator, "operator"},
		{"lowercase operator", "k", "in", []string{"a"}, nil, ErrUnknownOperator, "operator"},
		{"empty operator", "k", "", nil, nil, ErrUnknownOperator, "operator"},
		{"In without values", "k", In, nil, nil, ErrMissingValues, "values"},
		{"In with empty slice", "k", In, []string{}, nil, ErrMissingValues, "values"},
		{"In with invalid label value", "k", In, []string{"ok", "-bad"}, nil, ErrInvalidValues, "values[1]"},
		{"NotIn with too long value", "k", NotIn, []string{strings.Repeat("v", 64)}, nil, ErrInvalidValues, "values[0]"},
		{"Exists with values", "k", Exists, []string{"a"}, nil, ErrInvalidValues, "values"},
		{"DoesNotExist with values", "k", DoesNotExist, []string{"a"}, nil, ErrInvalidValues, "values"},
		{"Gt without values", "k", Gt, nil, nil, ErrInvalidValues, "values"},
		{"Lt with two values", "k", Lt, []string{"1", "2"}, nil, ErrInvalidValues, "values"},
		{"Gt non-integer", "k", Gt, []string{"abc"}, nil, ErrInvalidValues, "values[0]"},
		{"Lt decimal", "k", Lt, []string{"1.5"}, nil, ErrInvalidValues, "values[0]"},
		{"Gte empty string", "k", Gte, []string{""}, nil, ErrInvalidValues, "values[0]"},
		{"Lte overflow", "k", Lte, []string{"9223372036854775808"}, nil, ErrInvalidValues, "values[0]"},
		{"Gt underscore", "k", Gt, []string{"1_000"}, nil, ErrInvalidValues, "values[0]"},
		{"minValues zero", "k", Exists, nil, intp(0), ErrInvalidMinValues, "minValues"},
		{"minValues negative", "k", Exists, nil, intp(-1), ErrInvalidMinValues, "minValues"},
		{"minValues 51", "k", Exists, nil, intp(51), ErrInvalidMinValues, "minValues"},
		{"minValues above In values", "k", In, []string{"a", "b"}, intp(3), ErrInvalidMinValues, "minValues"},
		{"minValues above distinct In values", "k", In, []string{"a", "a"}, intp(2), ErrInvalidMinValues, "minValues"},
		{"minValues on DoesNotExist", "k", DoesNotExist, nil, intp(1), ErrInvalidMinValues, "minValues"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.key, tc.op, tc.values, tc.minValues)
			if r != nil {
				t.Errorf("New returned %v with error %v", r, err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *Error", err, err)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tc.sentinel)
			}
			if e.Key != tc.key || e.Field != tc.field || e.Reason == "" {
				t.Errorf("got Key %q Field %q Reason %q, want key %q field %q", e.Key, e.Field, e.Reason, tc.key, tc.field)
			}
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(tc.key)) || !strings.Contains(msg, e.Reason) {
				t.Errorf("message %q does not name key %q and reason", msg, tc.key)
			}
			// MustNew panics with the same error.
			func() {
				defer func() {
					if p := recover(); p == nil || !errors.Is(p.(error), tc.sentinel) {
						t.Errorf("MustNew panicked with %v", p)
					}
				}()
				MustNew(tc.key, tc.op, tc.values, tc.minValues)
			}()
		})
	}
}

func TestNewAccepts(t *testing.T) {
	tests := []struct {
		name      string
		key       string
		op        Operator
		values    []string
		minValues *int
	}{
		{"plain key", "team", In, []string{"a"}, nil},
		{"prefixed key", "karpenter.k8s.aws/instance-family", Exists, nil, intp(50)},
		{"empty label value", "k", In, []string{""}, nil},
		{"NotIn without values", "k", NotIn, nil, nil},
		{"negative bound", "k", Gt, []string{"-5"}, nil},
		{"signed bound", "k", Lt, []string{"+5"}, nil},
		{"padded bound", "k", Gte, []string{"007"}, nil},
		{"int64 max", "k", Lte, []string{maxI}, nil},
		{"int64 min", "k", Gte, []string{minI}, nil},
		{"minValues equal to In values", "k", In, []string{"a", "b"}, intp(2)},
		{"minValues with Gt", "k", Gt, []string{"1"}, intp(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.key, tc.op, tc.values, tc.minValues); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewDoesNotModifyValues(t *testing.T) {
	values := []string{"c", "a", "b", "a"}
	orig := slices.Clone(values)
	r := MustNew("k", In, values, nil)
	if !slices.Equal(values, orig) {
		t.Fatalf("New modified its input: %q", values)
	}
	if got := r.Values(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Values() = %q", got)
	}
	// Values returns a copy.
	r.Values()[0] = "zzz"
	if r.Values()[0] != "a" {
		t.Fatal("Values() exposed internal storage")
	}
}

func TestErrorFieldError(t *testing.T) {
	base := field.NewPath("spec", "template", "spec", "requirements").Index(2)
	tests := []struct {
		name      string
		op        Operator
		values    []string
		wantType  field.ErrorType
		wantField string
	}{
		{"unknown operator lists the valid ones", "Foo", nil, field.ErrorTypeNotSupported, "spec.template.spec.requirements[2].operator"},
		{"missing values", In, nil, field.ErrorTypeRequired, "spec.template.spec.requirements[2].values"},
		{"bad integer", Gt, []string{"x"}, field.ErrorTypeInvalid, "spec.template.spec.requirements[2].values[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("k", tc.op, tc.values, nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatal(err)
			}
			fe := e.FieldError(base)
			if fe.Type != tc.wantType || fe.Field != tc.wantField {
				t.Fatalf("got %s at %s, want %s at %s", fe.Type, fe.Field, tc.wantType, tc.wantField)
			}
			if tc.wantType == field.ErrorTypeNotSupported {
				for _, op := range Operators() {
					if !strings.Contains(fe.Error(), string(op)) {
						t.Errorf("%q does not list operator %s", fe.Error(), op)
					}
				}
			}
		})
	}
}

// unsat is an unsatisfiable requirement built without Intersection.
func unsat(key string) *Requirement { return MustNew(key, Gt, []string{maxI}, nil) }

func TestIntersection(t *testing.T) {
	mk := func(op Operator, vals ...string) *Requirement { return MustNew("k", op, vals, nil) }
	tests := []struct {
		name string
		a, b *Requirement
		want *Requirement
		// wantString pins the canonical rendering where want alone cannot
		// be written as a single New call.
		wantString string
	}{
		{name: "In∩In overlapping", a: mk(In, "a", "b", "c"), b: mk(In, "d", "c", "b"), want: mk(In, "b", "c")},
		{name: "In∩In disjoint", a: mk(In, "a"), b: mk(In, "b"), want: unsat("k")},
		{name: "In∩NotIn", a: mk(In, "a", "b"), b: mk(NotIn, "b", "z"), want: mk(In, "a")},
		{name: "In∩NotIn excluding all", a: mk(In, "a"), b: mk(NotIn, "a"), want: unsat("k")},
		{name: "In∩Exists", a: mk(In, "a"), b: mk(Exists), want: mk(In, "a")},
		{name: "In∩DoesNotExist", a: mk(In, "a"), b: mk(DoesNotExist), want: unsat("k")},
		{name: "In∩Gt with integers", a: mk(In, "3", "5", "05", "9"), b: mk(Gt, "4"), want: mk(In, "5", "05", "9")},
		{name: "In∩Gt with non-integers", a: mk(In, "a", "b"), b: mk(Gt, "1"), want: unsat("k")},
		{name: "In∩Lt", a: mk(In, "3", "5", "x"), b: mk(Lt, "5"), want: mk(In, "3")},
		{name: "In∩Gte includes the bound", a: mk(In, "4", "5"), b: mk(Gte, "5"), want: mk(In, "5")},
		{name: "In∩Lte includes the bound", a: mk(In, "4", "5"), b: mk(Lte, "4"), want: mk(In, "4")},
		{name: "NotIn∩NotIn is the union", a: mk(NotIn, "a", "c"), b: mk(NotIn, "b", "c"), want: mk(NotIn, "a", "b", "c")},
		{name: "NotIn∩Exists needs the label", a: mk(NotIn, "a"), b: mk(Exists), wantString: "k Exists NotIn [a]"},
		{name: "NotIn∩DoesNotExist", a: mk(NotIn, "a"), b: mk(DoesNotExist), want: mk(DoesNotExist)},
		{name: "NotIn∩Gt keeps only excluded integers in bounds", a: mk(NotIn, "a", "3", "7", "07"), b: mk(Gt, "5"), wantString: "k Gt 5 NotIn [07 7]"},
		{name: "empty NotIn∩In", a: mk(NotIn), b: mk(In, "a"), want: mk(In, "a")},
		{name: "Exists∩Exists", a: mk(Exists), b: mk(Exists), want: mk(Exists)},
		{name: "Exists∩DoesNotExist", a: mk(Exists), b: mk(DoesNotExist), want: unsat("k")},
		{name: "Exists∩Gt", a: mk(Exists), b: mk(Gt, "2"), want: mk(Gt, "2")},
		{name: "DoesNotExist∩DoesNotExist", a: mk(DoesNotExist), b: mk(DoesNotExist), want: mk(DoesNotExist)},
		{name: "DoesNotExist∩Lt", a: mk(DoesNotExist), b: mk(Lt, "2"), want: unsat("k")},
		{name: "Gt∩Lt overlapping", a: mk(Gt, "5"), b: mk(Lt, "10"), wantString: "k Gt 5 Lt 10"},
		{name: "Gt∩Lt disjoint", a: mk(Gt, "5"), b: mk(Lt, "6"), want: unsat("k")},
		{name: "Gt∩Lt single integer", a: mk(Gt, "5"), b: mk(Lt, "7"), wantString: "k Gt 5 Lt 7"},
		{name: "Gte∩Lte equal bounds", a: mk(Gte, "6"), b: mk(Lte, "6"), wantString: "k Gt 5 Lt 7"},
		{name: "Gte∩Lte crossed", a: mk(Gte, "7"), b: mk(Lte, "6"), want: unsat("k")},
		{name: "Gt∩Gt keeps the tighter", a: mk(Gt, "5"), b: mk(Gt, "8"), want: mk(Gt, "8")},
		{name: "Gt∩Gte same set", a: mk(Gt, "5"), b: mk(Gte, "6"), want: mk(Gt, "5")},
		{name: "Lt∩Lte keeps the tighter", a: mk(Lt, "5"), b: mk(Lte, "3"), want: mk(Lt, "4")},
		{name: "Gte min∩Lte max is all integers", a: mk(Gte, minI), b: mk(Lte, maxI), wantString: "k Gte " + minI + " Lte " + maxI},
		{name: "Gt max is unsatisfiable", a: mk(Gt, maxI), b: mk(Exists), want: unsat("k")},
		{name: "Lt min is unsatisfiable", a: mk(Lt, minI), b: mk(Exists), want: unsat("k")},
		{name: "nil is unconstrained", a: mk(In, "a"), b: nil, want: mk(In, "a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]*Requirement{{tc.a, tc.b}, {tc.b, tc.a}} {
				got := order[0].Intersection(order[1])
				if tc.want != nil && !got.Equal(tc.want) {
					t.Errorf("%v ∩ %v = %v, want %v", order[0], order[1], got, tc.want)
				}
				if tc.wantString != "" && got.String() != tc.wantString {
					t.Errorf("%v ∩ %v = %q, want %q", order[0], order[1], got.String(), tc.wantString)
				}
			}
		})
	}
}

func TestIntersectionReusesInputs(t *testing.T) {
	a := MustNew("k", In, []string{"a", "b"}, nil)
	if got := a.Intersection(MustNew("k", Exists, nil, nil)); got != a {
		t.Errorf("In ∩ Exists allocated a new requirement %p, want %p", got, a)
	}
	b := MustNew("k", In, []string{"a"}, nil)
	if got := a.Intersection(b); got != b {
		t.Errorf("superset ∩ subset did not return the subset")
	}
	allocs := testing.AllocsPerRun(100, func() { _ = a.Intersection(a) })
	if allocs != 0 {
		t.Errorf("self-intersection allocates %v times", allocs)
	}
}

func TestOperatorAndLen(t *testing.T) {
	tests := []struct {
		name      string
		r         *Requirement
		op        Operator
		length    int
		absent    bool
		satisfies bool
	}{
		{"In", MustNew("k", In, []string{"b", "a"}, nil), In, 2, false, true},
		{"NotIn", MustNew("k", NotIn, []string{"a"}, nil), NotIn, math.MaxInt, true, true},
		{"Exists", MustNew("k", Exists, nil, nil), Exists, math.MaxInt, false, true},
		{"DoesNotExist", MustNew("k", DoesNotExist, nil, nil), DoesNotExist, 0, true, true},
		{"Gt", MustNew("k", Gt, []string{"3"}, nil), Gt, math.MaxInt, false, true},
		{"Gte becomes Gt", MustNew("k", Gte, []string{"3"}, nil), Gt, math.MaxInt, false, true},
		{"Lte becomes Lt", MustNew("k", Lte, []string{"3"}, nil), Lt, math.MaxInt, false, true},
		{"Gte at int64 min stays Gte", MustNew("k", Gte, []string{minI}, nil), Gte, math.MaxInt, false, true},
		{"Lte at int64 max stays Lte", MustNew("k", Lte, []string{maxI}, nil), Lte, math.MaxInt, false, true},
		{"unsatisfiable", unsat("k"), In, 0, false, false},
		{"nil", nil, NotIn, math.MaxInt, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Operator(); got != tc.op {
				t.Errorf("Operator() = %s, want %s", got, tc.op)
			}
			if got := tc.r.Len(); got != tc.length {
				t.Errorf("Len() = %d, want %d", got, tc.length)
			}
			if got := tc.r.AllowsAbsent(); got != tc.absent {
				t.Errorf("AllowsAbsent() = %v, want %v", got, tc.absent)
			}
			if got := tc.r.Satisfiable(); got != tc.satisfies {
				t.Errorf("Satisfiable() = %v, want %v", got, tc.satisfies)
			}
		})
	}
}

func TestHas(t *testing.T) {
	tests := []struct {
		name    string
		r       *Requirement
		allowed []string
		denied  []string
	}{
		{"In", MustNew("k", In, []string{"a", "b"}, nil), []string{"a", "b"}, []string{"c", "", "A"}},
		{"In with many values bisects", MustNew("k", In, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, nil), []string{"a", "e", "j"}, []string{"k", "0", "ee"}},
		{"NotIn", MustNew("k", NotIn, []string{"a"}, nil), []string{"b", ""}, []string{"a"}},
		{"Exists", MustNew("k", Exists, nil, nil), []string{"a", ""}, nil},
		{"DoesNotExist", MustNew("k", DoesNotExist, nil, nil), nil, []string{"a", ""}},
		{"Gt compares as integers", MustNew("k", Gt, []string{"9"}, nil), []string{"10", "010", "+10", maxI}, []string{"9", "8", "a", "", "10.0", "9223372036854775808", "1e3"}},
		{"Lt with negatives", MustNew("k", Lt, []string{"-2"}, nil), []string{"-3", "-03", minI}, []string{"-2", "0", "-", "+"}},
		{"Gte", MustNew("k", Gte, []string{"0"}, nil), []string{"0", "-0", "+0", "00"}, []string{"-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range tc.allowed {
				if !tc.r.Has(v) {
					t.Errorf("%v Has(%q) = false", tc.r, v)
				}
			}
			for _, v := range tc.denied {
				if tc.r.Has(v) {
					t.Errorf("%v Has(%q) = true", tc.r, v)
				}
			}
		})
	}
}

func TestHasDoesNotAllocate(t *testing.T) {
	for _, r := range []*Requirement{
		MustNew("k", In, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, nil),
		MustNew("k", NotIn, []string{"a"}, nil),
		MustNew("k", Gt, []string{"3"}, nil),
	} {
		for _, v := range []string{"e", "zz", "not-a-number", "99999999999999999999"} {
			if n := testing.AllocsPerRun(100, func() { _ = r.Has(v) }); n != 0 {
				t.Errorf("%v Has(%q) allocates %v times", r, v, n)
			}
		}
	}
}

func TestAny(t *testing.T) {
	tests := []struct {
		name   string
		r      *Requirement
		want   string
		wantOK bool
	}{
		{"In gives the smallest", MustNew("k", In, []string{"b", "a"}, nil), "a", true},
		{"Exists gives 0", MustNew("k", Exists, nil, nil), "0", true},
		{"NotIn skips exclusions", MustNew("k", NotIn, []string{"0", "1"}, nil), "2", true},
		{"Gt starts at the bound", MustNew("k", Gt, []string{"5"}, nil), "6", true},
		{"Lt above zero gives 0", MustNew("k", Lt, []string{"3"}, nil), "0", true},
		{"Lt below zero walks down", MustNew("k", Lt, []string{"-3"}, nil), "-4", true},
		{"every spelling excluded pads", MustNew("k", Gte, []string{"6"}, nil).Intersection(MustNew("k", Lte, []string{"6"}, nil)).Intersection(MustNew("k", NotIn, []string{"6", "06"}, nil)), "006", true},
		{"top of int64", MustNew("k", Gte, []string{maxI}, nil).Intersection(MustNew("k", NotIn, []string{maxI}, nil)), "0" + maxI, true},
		{"bottom of int64", MustNew("k", Lte, []string{minI}, nil), minI, true},
		{"DoesNotExist has none", MustNew("k", DoesNotExist, nil, nil), "", false},
		{"unsatisfiable has none", unsat("k"), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.r.Any()
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Any() = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
			if ok && !tc.r.Has(got) {
				t.Fatalf("Any() = %q is not allowed by %v", got, tc.r)
			}
		})
	}
}

func TestWireForm(t *testing.T) {
	tests := []struct {
		name string
		r    *Requirement
		// want is the expected expression list, written "Op v1 v2;Op ...".
		want string
	}{
		{"In", MustNew("k", In, []string{"b", "a"}, nil), "In a b"},
		{"NotIn", MustNew("k", NotIn, []string{"a"}, nil), "NotIn a"},
		{"Exists", MustNew("k", Exists, nil, nil), "Exists"},
		{"DoesNotExist", MustNew("k", DoesNotExist, nil, nil), "DoesNotExist"},
		{"Gte maps to Gt", MustNew("k", Gte, []string{"4"}, nil), "Gt 3"},
		{"Lte maps to Lt", MustNew("k", Lte, []string{"4"}, nil), "Lt 5"},
		{"Gte at min stays", MustNew("k", Gte, []string{minI}, nil), "Gte " + minI},
		{"Lte at max stays", MustNew("k", Lte, []string{maxI}, nil), "Lte " + maxI},
		{"bounded range", MustNew("k", Gt, []string{"1"}, nil).Intersection(MustNew("k", Lt, []string{"9"}, nil)), "Gt 1;Lt 9"},
		{"Exists and NotIn", MustNew("k", Exists, nil, nil).Intersection(MustNew("k", NotIn, []string{"a"}, nil)), "Exists;NotIn a"},
		{"bounds and NotIn", MustNew("k", Gt, []string{"1"}, nil).Intersection(MustNew("k", Lt, []string{"9"}, nil)).Intersection(MustNew("k", NotIn, []string{"5"}, nil)), "Gt 1;Lt 9;NotIn 5"},
		{"unsatisfiable", unsat("k"), "In"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, e := range tc.r.NodeSelectorRequirements() {
				if e.Key != "k" {
					t.Errorf("key %q", e.Key)
				}
				parts = append(parts, strings.Join(append([]string{string(e.Operator)}, e.Values...), " "))
			}
			if got := strings.Join(parts, ";"); got != tc.want {
				t.Fatalf("NodeSelectorRequirements() = %q, want %q", got, tc.want)
			}
			// Round trip: parsing the expressions back gives r again.
			if !tc.r.Satisfiable() {
				return
			}
			var back *Requirement
			for _, e := range tc.r.NodeSelectorRequirements() {
				x, err := FromNodeSelectorRequirement(e)
				if err != nil {
					t.Fatal(err)
				}
				back = back.Intersection(x)
			}
			if !back.Equal(tc.r) {
				t.Fatalf("round trip gave %v, want %v", back, tc.r)
			}
		})
	}
}

func TestString(t *testing.T) {
	r := MustNew("karpenter.k8s.aws/instance-family", Exists, nil, intp(5))
	if got, want := r.String(), "karpenter.k8s.aws/instance-family Exists minValues 5"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	var nilReq *Requirement
	if nilReq.String() == "" {
		t.Error("nil String() is empty")
	}
	if got := r.WithMinValues(nil).String(); got != "karpenter.k8s.aws/instance-family Exists" {
		t.Errorf("WithMinValues(nil) = %q", got)
	}
	if r.MinValues() == nil || *r.MinValues() != 5 {
		t.Errorf("MinValues() = %v", r.MinValues())
	}
	*r.MinValues() = 9 // a copy: must not change r
	if *r.MinValues() != 5 {
		t.Error("MinValues exposed internal storage")
	}
}
