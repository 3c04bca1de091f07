package requirements

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
)

// Each property compares the package with the brute-force oracle of
// oracle_test.go over checkUniverse. The universe contains fresh values no
// generated requirement mentions, so complements (always infinite here) have
// witnesses and "non-empty" is decided exactly; there is no divergence to
// excuse.

func TestPropertyMembership(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genConj(t, "c")
		r := c.mustBuild(t, "k.io/x")
		agree(t, "built", r, c)

		// Len / Values / Satisfiable / Any agree with the oracle.
		var allowed []string
		for _, v := range checkUniverse {
			if c.sat(v, true) {
				allowed = append(allowed, v)
			}
		}
		if r.IsFinite() {
			if got := r.Values(); !slices.Equal(got, allowed) {
				t.Fatalf("%v Values() = %q, oracle allows %q", r, got, allowed)
			}
			if r.Len() != len(allowed) {
				t.Fatalf("%v Len() = %d, oracle allows %d", r, r.Len(), len(allowed))
			}
		} else if len(allowed) == 0 || r.Len() == 0 {
			t.Fatalf("%v is a complement but oracle allows %q, Len %d", r, allowed, r.Len())
		}
		if got, want := r.Satisfiable(), someSat(c.sat); got != want {
			t.Fatalf("%v Satisfiable() = %v, oracle %v", r, got, want)
		}
		v, ok := r.Any()
		if ok != (len(allowed) > 0) {
			t.Fatalf("%v Any() ok = %v, oracle allows %q", r, ok, allowed)
		}
		if ok && !c.sat(v, true) {
			t.Fatalf("%v Any() = %q, which oracle %v rejects", r, v, c)
		}
		if ok && r.IsFinite() && v != allowed[0] {
			t.Fatalf("%v Any() = %q, want smallest %q", r, v, allowed[0])
		}
	})
}

func TestPropertyIntersectionAlgebra(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ca, cb, cc := genConj(t, "a"), genConj(t, "b"), genConj(t, "c")
		a, b, c := ca.mustBuild(t, "k.io/x"), cb.mustBuild(t, "k.io/x"), cc.mustBuild(t, "k.io/x")

		ab, ba := a.Intersection(b), b.Intersection(a)
		agree(t, "a∩b", ab, append(slices.Clone(ca), cb...))
		if !ab.Equal(ba) || ab.String() != ba.String() {
			t.Fatalf("not commutative: %v vs %v", ab, ba)
		}
		left, right := ab.Intersection(c), a.Intersection(b.Intersection(c))
		if !left.Equal(right) || left.String() != right.String() {
			t.Fatalf("not associative: %v vs %v", left, right)
		}
		if !a.Intersection(a).Equal(a) {
			t.Fatalf("not idempotent: %v", a)
		}
		// Canonical form: the same set built two ways prints the same, and
		// inputs survive unchanged.
		again := append(slices.Clone(cb), ca...).mustBuild(t, "k.io/x")
		if again.String() != ab.String() {
			t.Fatalf("canonical form differs: %v vs %v", again, ab)
		}
		if a.String() != ca.mustBuild(t, "k.io/x").String() {
			t.Fatalf("intersection modified an input: %v", a)
		}
		// Compatibility of two single-key sets is exactly "intersection is
		// satisfiable" and exactly the oracle's answer.
		want := someSat(ca.sat, cb.sat)
		if got := ab.Satisfiable(); got != want {
			t.Fatalf("(%v)∩(%v) = %v, Satisfiable %v, oracle %v", a, b, ab, got, want)
		}
		if got := a.Intersects(b); got != want {
			t.Fatalf("%v.Intersects(%v) = %v, oracle %v", a, b, got, want)
		}
		if a.Intersects(nil) != a.Satisfiable() || (*Requirement)(nil).Intersects(b) != b.Satisfiable() {
			t.Fatalf("Intersects with nil disagrees with Satisfiable for %v, %v", a, b)
		}
	})
}

// TestPropertyCanonical checks that the canonical form is unique: whatever
// expressions built a requirement, it is Equal to (and prints like) the one
// rebuilt from the oracle's verdicts alone, and two requirements allow the
// same labels exactly when they are Equal. The tiny space makes equal sets
// built in different ways common.
func TestPropertyCanonical(t *testing.T) {
	tiny := exprSpace{values: []string{"1", "2", "05", "a"}, lo: 0, hi: 3, maxExprs: 3}
	rapid.Check(t, func(t *rapid.T) {
		space := rapid.SampledFrom([]exprSpace{tiny, defaultSpace}).Draw(t, "space")
		ca := space.genConj(t, "a")
		a := ca.mustBuild(t, "k.io/x")
		canon := oracleCanonical(ca)
		if c := canon.mustBuild(t, "k.io/x"); !a.Equal(c) || a.String() != c.String() {
			t.Fatalf("%v built from %v; the oracle's canonical %v builds %v", a, ca, canon, c)
		}
		b := space.genConj(t, "b").mustBuild(t, "k.io/x")
		same := a.AllowsAbsent() == b.AllowsAbsent()
		for _, v := range checkUniverse {
			same = same && a.Has(v) == b.Has(v)
		}
		if same != a.Equal(b) || same != (a.String() == b.String()) {
			t.Fatalf("%v and %v: same labels %v, Equal %v", a, b, same, a.Equal(b))
		}
	})
}

func TestPropertyMinValuesIsMax(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ma, mb := rapid.IntRange(0, 3).Draw(t, "ma"), rapid.IntRange(0, 3).Draw(t, "mb")
		mv := func(n int) *int {
			if n == 0 {
				return nil
			}
			return &n
		}
		a := MustNew("k.io/x", Exists, nil, mv(ma))
		b := MustNew("k.io/x", NotIn, []string{"a"}, mv(mb))
		got := a.Intersection(b).MinValues()
		want := max(ma, mb)
		if (got == nil) != (want == 0) || (got != nil && *got != want) {
			t.Fatalf("minValues of %v ∩ %v = %v, want %d", a, b, got, want)
		}
	})
}

func TestPropertyWireRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genConj(t, "c")
		r := c.mustBuild(t, "k.io/x")
		exprs := r.NodeSelectorRequirements()
		if len(exprs) == 0 || len(exprs) > 3 {
			t.Fatalf("%v has %d expressions", r, len(exprs))
		}
		var back *Requirement
		for _, e := range exprs {
			if e.Key != "k.io/x" {
				t.Fatalf("%v: expression key %q", r, e.Key)
			}
			x, err := FromNodeSelectorRequirement(e)
			if !r.Satisfiable() {
				// The only unsatisfiable wire form is an empty In, which
				// Kubernetes and New both reject.
				if !errors.Is(err, ErrMissingValues) || e.Operator != corev1.NodeSelectorOpIn {
					t.Fatalf("unsatisfiable %v printed as %v, error %v", r, e, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v printed %v, which does not parse: %v", r, e, err)
			}
			back = back.Intersection(x)
		}
		if !back.Equal(r) {
			t.Fatalf("round trip %v -> %v -> %v", r, exprs, back)
		}
		// The single expression is exact when one suffices and otherwise
		// allows a superset.
		one, err := FromNodeSelectorRequirement(r.NodeSelectorRequirement())
		if err != nil {
			t.Fatalf("%v: single expression does not parse: %v", r, err)
		}
		if Operator(r.NodeSelectorRequirement().Operator) != r.Operator() {
			t.Fatalf("%v: single expression %v, Operator() %s", r, r.NodeSelectorRequirement(), r.Operator())
		}
		if len(exprs) == 1 && !one.Equal(r) {
			t.Fatalf("%v: single expression %v is not exact", r, one)
		}
		if r.AllowsAbsent() && !one.AllowsAbsent() {
			t.Fatalf("%v: single expression %v drops absence", r, one)
		}
		for _, v := range checkUniverse {
			if r.Has(v) && !one.Has(v) {
				t.Fatalf("%v: single expression %v drops %q", r, one, v)
			}
		}
	})
}

// oracleCompatible is the documented Compatible policy evaluated by brute
// force: per key, some value (or absence) satisfies both sides, where a key
// the node side lacks means "absent" unless open and a key the incoming side
// lacks means "anything". It returns the first failing key in sorted order.
func oracleCompatible(node, incoming keyed, open func(string) bool) (string, bool) {
	keys := map[string]bool{}
	for k := range node {
		keys[k] = true
	}
	for k := range incoming {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		nodeSide := func(v string, present bool) bool { return !present }
		if c, ok := node[k]; ok {
			nodeSide = c.sat
		} else if open != nil && open(k) {
			nodeSide = func(string, bool) bool { return true }
		}
		in := func(string, bool) bool { return true }
		if c, ok := incoming[k]; ok {
			in = c.sat
		}
		if !someSat(nodeSide, in) {
			return k, false
		}
	}
	return "", true
}

func TestPropertyCompatible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kn, ki := genKeyed(t, "node"), genKeyed(t, "in")
		node, in := kn.build(t), ki.build(t)
		var open func(string) bool
		if rapid.Bool().Draw(t, "open") {
			openKey := rapid.SampledFrom(genKeys).Draw(t, "openKey")
			open = func(k string) bool { return k == openKey }
		}
		err := node.CompatibleWith(in, CompatibleOptions{OpenKeys: open})
		wantKey, ok := oracleCompatible(kn, ki, open)
		if ok != (err == nil) {
			t.Fatalf("node {%v} incoming {%v}: Compatible = %v, oracle ok=%v (key %q)", kn, ki, err, ok, wantKey)
		}
		if err != nil {
			var ie *IncompatibleError
			if !errors.As(err, &ie) || ie.Key != wantKey || !errors.Is(err, ErrIncompatible) {
				t.Fatalf("node {%v} incoming {%v}: error %v, want key %q", kn, ki, err, wantKey)
			}
		}
		if open == nil {
			if got := node.Compatible(in); (got == nil) != (err == nil) {
				t.Fatalf("Compatible %v vs CompatibleWith %v", got, err)
			}
		}

		// The key-wise intersection allows exactly both sides, per key.
		both := node.Intersection(in)
		if !slices.IsSorted(both.Keys()) {
			t.Fatalf("keys not sorted: %v", both.Keys())
		}
		for _, k := range genKeys {
			want := append(slices.Clone(kn[k]), ki[k]...)
			if len(want) == 0 {
				if both.Has(k) {
					t.Fatalf("intersection constrains %s out of nowhere", k)
				}
				continue
			}
			agree(t, "rs∩o "+k, both.Get(k), want)
		}
		if got, want := both.String(), in.Intersection(node).String(); got != want {
			t.Fatalf("Requirements intersection not commutative: %s vs %s", got, want)
		}
	})
}

func TestPropertyMatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := genKeyed(t, "rs")
		rs := k.build(t)
		labels := map[string]string{}
		for _, key := range append(slices.Clone(genKeys), "k.io/other") {
			if rapid.Bool().Draw(t, key+"?") {
				labels[key] = rapid.SampledFrom(checkUniverse).Draw(t, key)
			}
		}
		wantKey := ""
		for _, key := range k.keys() {
			v, present := labels[key]
			if !k[key].sat(v, present) {
				wantKey = key
				break
			}
		}
		err := rs.Matches(labels)
		var ie *IncompatibleError
		switch {
		case wantKey == "" && err != nil:
			t.Fatalf("{%v} Matches(%v) = %v, oracle matches", k, labels, err)
		case wantKey != "" && (!errors.As(err, &ie) || ie.Key != wantKey):
			t.Fatalf("{%v} Matches(%v) = %v, oracle fails on %q", k, labels, err, wantKey)
		}
		// Labels holds exactly the keys whose oracle allows one value and
		// not absence (complements always have a fresh witness in the
		// universe, so "one value" means a one-value finite set).
		got := rs.Labels()
		for _, key := range k.keys() {
			var only []string
			for _, v := range checkUniverse {
				if k[key].sat(v, true) {
					only = append(only, v)
				}
			}
			single := len(only) == 1 && !k[key].sat("", false)
			if v, ok := got[key]; ok != single || (single && v != only[0]) {
				t.Fatalf("{%v} Labels() = %v; oracle allows %q for %s", k, got, only, key)
			}
		}
		if len(got) > len(k) {
			t.Fatalf("{%v} Labels() = %v has extra keys", k, got)
		}
	})
}
