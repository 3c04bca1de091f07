package requirements

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func rq(key string, op Operator, vals ...string) *Requirement { return MustNew(key, op, vals, nil) }

func TestCompatible(t *testing.T) {
	const k = "example.com/k"
	tests := []struct {
		name     string
		node     Requirements
		incoming Requirements
		open     func(string) bool
		// wantKey / wantReason are empty when compatible.
		wantKey    string
		wantReason IncompatibleReason
	}{
		{name: "In/In overlapping", node: NewRequirements(rq(k, In, "a", "b")), incoming: NewRequirements(rq(k, In, "b", "c"))},
		{name: "In/In disjoint", node: NewRequirements(rq(k, In, "a")), incoming: NewRequirements(rq(k, In, "b")), wantKey: k, wantReason: ReasonDisjoint},
		{name: "In/NotIn excluding everything", node: NewRequirements(rq(k, In, "a")), incoming: NewRequirements(rq(k, NotIn, "a")), wantKey: k, wantReason: ReasonDisjoint},
		{name: "In/NotIn leaving a value", node: NewRequirements(rq(k, In, "a", "b")), incoming: NewRequirements(rq(k, NotIn, "a"))},
		{name: "NotIn/NotIn share absence", node: NewRequirements(rq(k, NotIn, "a")), incoming: NewRequirements(rq(k, NotIn, "b"))},
		{name: "NotIn/DoesNotExist share absence", node: NewRequirements(rq(k, NotIn, "a")), incoming: NewRequirements(rq(k, DoesNotExist))},
		{name: "DoesNotExist/DoesNotExist", node: NewRequirements(rq(k, DoesNotExist)), incoming: NewRequirements(rq(k, DoesNotExist))},
		{name: "DoesNotExist/In", node: NewRequirements(rq(k, DoesNotExist)), incoming: NewRequirements(rq(k, In, "a")), wantKey: k, wantReason: ReasonDisjoint},
		{name: "Exists/DoesNotExist", node: NewRequirements(rq(k, Exists)), incoming: NewRequirements(rq(k, DoesNotExist)), wantKey: k, wantReason: ReasonDisjoint},
		{name: "Exists/NotIn", node: NewRequirements(rq(k, Exists)), incoming: NewRequirements(rq(k, NotIn, "a"))},
		{name: "Gt/Lt overlapping", node: NewRequirements(rq(k, Gt, "5")), incoming: NewRequirements(rq(k, Lt, "10"))},
		{name: "Gt/Lt disjoint", node: NewRequirements(rq(k, Gt, "5")), incoming: NewRequirements(rq(k, Lt, "6")), wantKey: k, wantReason: ReasonDisjoint},
		{name: "Gte/Lte touching", node: NewRequirements(rq(k, Gte, "6")), incoming: NewRequirements(rq(k, Lte, "6"))},
		{name: "Gte/Lt edge excluded", node: NewRequirements(rq(k, Gte, "6")), incoming: NewRequirements(rq(k, Lt, "6")), wantKey: k, wantReason: ReasonDisjoint},
		{name: "In non-integers/Gt", node: NewRequirements(rq(k, In, "a", "b")), incoming: NewRequirements(rq(k, Gt, "1")), wantKey: k, wantReason: ReasonDisjoint},
		{name: "In integer/Gt", node: NewRequirements(rq(k, In, "a", "5")), incoming: NewRequirements(rq(k, Gt, "4"))},
		{name: "excluded integer has other spellings", node: NewRequirements(rq(k, Gt, "5").Intersection(rq(k, NotIn, "6"))), incoming: NewRequirements(rq(k, Lt, "7"))},
		{name: "undefined In", node: Requirements{}, incoming: NewRequirements(rq(k, In, "a")), wantKey: k, wantReason: ReasonUndefined},
		{name: "undefined Exists", node: Requirements{}, incoming: NewRequirements(rq(k, Exists)), wantKey: k, wantReason: ReasonUndefined},
		{name: "undefined Gt", node: Requirements{}, incoming: NewRequirements(rq(k, Gt, "1")), wantKey: k, wantReason: ReasonUndefined},
		{name: "undefined NotIn", node: Requirements{}, incoming: NewRequirements(rq(k, NotIn, "a"))},
		{name: "undefined DoesNotExist", node: Requirements{}, incoming: NewRequirements(rq(k, DoesNotExist))},
		{name: "open In", node: Requirements{}, incoming: NewRequirements(rq(k, In, "a")), open: func(string) bool { return true }},
		{name: "open but unsatisfiable", node: Requirements{}, incoming: NewRequirements(unsat(k)), open: func(string) bool { return true }, wantKey: k, wantReason: ReasonUnsatisfiable},
		{name: "open predicate is per key", node: Requirements{}, incoming: NewRequirements(rq("a.io/x", In, "a"), rq("b.io/x", In, "a")), open: func(key string) bool { return key == "a.io/x" }, wantKey: "b.io/x", wantReason: ReasonUndefined},
		{name: "node-side unsatisfiable", node: NewRequirements(unsat(k)), incoming: Requirements{}, wantKey: k, wantReason: ReasonUnsatisfiable},
		{name: "node-only key is fine", node: NewRequirements(rq(k, In, "a")), incoming: Requirements{}},
		{
			name:     "first failing key in sorted order",
			node:     NewRequirements(rq("z.io/k", In, "a"), rq("b.io/k", In, "a"), rq("m.io/k", In, "a")),
			incoming: NewRequirements(rq("z.io/k", In, "b"), rq("m.io/k", In, "b"), rq("b.io/k", In, "a")),
			wantKey:  "m.io/k", wantReason: ReasonDisjoint,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.node.CompatibleWith(tc.incoming, CompatibleOptions{OpenKeys: tc.open})
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tc.open == nil && testing.AllocsPerRun(20, func() { _ = tc.node.Compatible(tc.incoming) }) != 0 {
					t.Error("successful Compatible allocates")
				}
				return
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) || !errors.Is(err, ErrIncompatible) {
				t.Fatalf("error %v is not an *IncompatibleError", err)
			}
			if ie.Key != tc.wantKey || ie.Reason != tc.wantReason {
				t.Fatalf("got key %q reason %s (%v), want key %q reason %s", ie.Key, ie.Reason, err, tc.wantKey, tc.wantReason)
			}
			if !strings.Contains(err.Error(), `"`+tc.wantKey+`"`) {
				t.Errorf("message %q does not name the key", err.Error())
			}
		})
	}
}

func TestIncompatibleMessages(t *testing.T) {
	const arch = "kubernetes.io/arch"
	tests := []struct {
		name     string
		node     Requirements
		incoming Requirements
		want     string
	}{
		{"single value not in the node's set", NewRequirements(rq(arch, In, "amd64")), NewRequirements(rq(arch, In, "arm64")),
			`key "kubernetes.io/arch": "arm64" not in [amd64]`},
		{"several values", NewRequirements(rq(arch, In, "amd64")), NewRequirements(rq(arch, In, "arm64", "s390x")),
			`key "kubernetes.io/arch": none of [arm64 s390x] in [amd64]`},
		{"other operators", NewRequirements(rq("k", Gt, "5")), NewRequirements(rq("k", Lt, "3")),
			`key "k": incoming Lt 3 and node-side Gt 5 have no value in common`},
		{"undefined", Requirements{}, NewRequirements(rq("team", In, "a")),
			`key "team": incoming In [a] needs the label, but the node side does not define the key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.node.Compatible(tc.incoming); got == nil || got.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", got, tc.want)
			}
		})
	}
}

func TestTypoHints(t *testing.T) {
	tests := []struct {
		name  string
		node  Requirements
		key   string
		extra []string
		want  string
	}{
		{"one letter short", Requirements{}, "topology.kubernetes.io/zon", nil, "topology.kubernetes.io/zone"},
		{"underscore for dash", Requirements{}, "karpenter.sh/capacity_type", nil, "karpenter.sh/capacity-type"},
		{"wrong domain", Requirements{}, "karpenter.sh/instance-family", nil, "karpenter.k8s.aws/instance-family"},
		{"node-side key", NewRequirements(rq("example.com/team", In, "a")), "example.com/teem", nil, "example.com/team"},
		{"caller hint key", Requirements{}, "example.com/tier", []string{"example.com/tiers", "other.io/x"}, "example.com/tiers"},
		{"ties go to the smaller key", Requirements{}, "kubernetes.io/osx", []string{"kubernetes.io/osxx"}, "kubernetes.io/os"},
		{"nothing close", Requirements{}, "example.com/unrelated", nil, ""},
		{"exact well-known key gets no hint", Requirements{}, "kubernetes.io/arch", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.node.CompatibleWith(NewRequirements(rq(tc.key, In, "a")), CompatibleOptions{HintKeys: tc.extra})
			var ie *IncompatibleError
			if !errors.As(err, &ie) {
				t.Fatalf("want an error, got %v", err)
			}
			if got := ie.Hint(); got != tc.want {
				t.Fatalf("Hint() = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !strings.Contains(err.Error(), `(typo of "`+tc.want+`"?)`) {
				t.Fatalf("message %q lacks the hint", err.Error())
			}
		})
	}
}

func TestMatches(t *testing.T) {
	rs := NewRequirements(
		rq("kubernetes.io/arch", In, "amd64", "arm64"),
		rq("example.com/gpu", DoesNotExist),
		rq("example.com/tier", NotIn, "batch"),
		rq("karpenter.k8s.aws/instance-cpu", Gte, "4"),
		rq("topology.kubernetes.io/zone", Exists),
	)
	base := map[string]string{
		"kubernetes.io/arch":             "arm64",
		"karpenter.k8s.aws/instance-cpu": "8",
		"topology.kubernetes.io/zone":    "us-east-1a",
		"unrelated":                      "x",
	}
	with := func(k, v string) map[string]string {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	without := func(k string) map[string]string {
		m := maps.Clone(base)
		delete(m, k)
		return m
	}
	tests := []struct {
		name       string
		labels     map[string]string
		wantKey    string
		wantReason IncompatibleReason
		wantHint   string
	}{
		{name: "all satisfied", labels: base},
		{name: "NotIn label present with another value", labels: with("example.com/tier", "web")},
		{name: "In value not allowed", labels: with("kubernetes.io/arch", "s390x"), wantKey: "kubernetes.io/arch", wantReason: ReasonLabelValue},
		{name: "In label missing", labels: without("kubernetes.io/arch"), wantKey: "kubernetes.io/arch", wantReason: ReasonLabelMissing},
		{name: "DoesNotExist label present", labels: with("example.com/gpu", "true"), wantKey: "example.com/gpu", wantReason: ReasonLabelValue},
		{name: "NotIn excluded value", labels: with("example.com/tier", "batch"), wantKey: "example.com/tier", wantReason: ReasonLabelValue},
		{name: "Gte below", labels: with("karpenter.k8s.aws/instance-cpu", "2"), wantKey: "karpenter.k8s.aws/instance-cpu", wantReason: ReasonLabelValue},
		{name: "Gte non-integer", labels: with("karpenter.k8s.aws/instance-cpu", "many"), wantKey: "karpenter.k8s.aws/instance-cpu", wantReason: ReasonLabelValue},
		{name: "extra near-miss labels are ignored", labels: with("topology.kubernetes.io/zone-x", "a")},
		{
			name: "Exists missing, hint from the labels",
			labels: func() map[string]string {
				m := without("topology.kubernetes.io/zone")
				m["topology.kubernetes.io/zonne"] = "a"
				return m
			}(),
			wantKey: "topology.kubernetes.io/zone", wantReason: ReasonLabelMissing, wantHint: "topology.kubernetes.io/zonne",
		},
		{name: "first failing key in sorted order", labels: with("kubernetes.io/arch", "s390x"), wantKey: "kubernetes.io/arch", wantReason: ReasonLabelValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := rs.Matches(tc.labels)
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if n := testing.AllocsPerRun(20, func() { _ = rs.Matches(tc.labels) }); n != 0 {
					t.Errorf("successful Matches allocates %v times", n)
				}
				return
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) || ie.Key != tc.wantKey || ie.Reason != tc.wantReason {
				t.Fatalf("got %v, want key %q reason %s", err, tc.wantKey, tc.wantReason)
			}
			if got := ie.Hint(); got != tc.wantHint {
				t.Errorf("Hint() = %q, want %q", got, tc.wantHint)
			}
		})
	}
	// The hint does not read the caller's map after Matches returns.
	labels := without("topology.kubernetes.io/zone")
	labels["topology.kubernetes.io/zonne"] = "a"
	err := rs.Matches(labels)
	delete(labels, "topology.kubernetes.io/zonne")
	labels["topology.kubernetes.io/zo"] = "a"
	var hinted *IncompatibleError
	if !errors.As(err, &hinted) || hinted.Hint() != "topology.kubernetes.io/zonne" {
		t.Fatalf("hint changed with the caller's map: %v", err)
	}
	// Two failing keys: the smaller one is reported, whatever the map order.
	twoBad := with("example.com/gpu", "true")
	twoBad["kubernetes.io/arch"] = "s390x"
	for range 20 {
		var ie *IncompatibleError
		if !errors.As(rs.Matches(twoBad), &ie) || ie.Key != "example.com/gpu" {
			t.Fatalf("got %v, want example.com/gpu", ie)
		}
	}
}

func TestRequirementsAddIntersectsAndCopiesAreIndependent(t *testing.T) {
	a := NewRequirements(rq("b.io/k", In, "x", "y"), rq("a.io/k", Exists))
	if got := a.Keys(); !slices.Equal(got, []string{"a.io/k", "b.io/k"}) {
		t.Fatalf("Keys() = %v", got)
	}
	before := a.String()
	b := a
	b.Add(rq("b.io/k", In, "y", "z"), rq("0.io/k", DoesNotExist), nil)
	c := a
	c.Add(rq("c.io/k", In, "q"))
	if a.String() != before {
		t.Fatalf("Add on a copy changed the original: %s -> %s", before, a.String())
	}
	if got := b.Get("b.io/k"); !got.Equal(rq("b.io/k", In, "y")) {
		t.Fatalf("Add did not intersect: %v", got)
	}
	if b.Has("c.io/k") || !c.Has("c.io/k") || c.Has("0.io/k") {
		t.Fatalf("copies share storage: b=%s c=%s", b, c)
	}
	if b.Len() != 3 || a.Len() != 2 || a.Get("zzz") != nil {
		t.Fatalf("Len: a=%d b=%d", a.Len(), b.Len())
	}
	// Intersection leaves both operands alone.
	_ = a.Intersection(b)
	if a.String() != before {
		t.Fatal("Intersection changed its receiver")
	}
	// Insertion order does not matter.
	x := NewRequirements(rq("c.io/k", In, "a"), rq("a.io/k", In, "a"), rq("b.io/k", In, "a"), rq("a.io/k", In, "a", "b"))
	y := NewRequirements(rq("a.io/k", In, "b", "a"), rq("b.io/k", In, "a"), rq("c.io/k", In, "a"), rq("a.io/k", In, "a"))
	if x.String() != y.String() || !x.Equal(y) {
		t.Fatalf("order-dependent: %s vs %s", x, y)
	}
	if x.Equal(a) || !(Requirements{}).Equal(NewRequirements()) {
		t.Fatal("Equal")
	}
	var keys []string
	for r := range x.All() {
		keys = append(keys, r.Key())
	}
	if !slices.Equal(keys, x.Keys()) {
		t.Fatalf("All() yields %v, Keys() %v", keys, x.Keys())
	}
}

func TestManyKeysBisect(t *testing.T) {
	var rs Requirements
	var keys []string
	for _, c := range "qwertyuiopasdfghjkl" {
		key := string(c) + ".io/k"
		keys = append(keys, key)
		rs.Add(rq(key, In, string(c)))
	}
	for _, key := range keys {
		if got := rs.Get(key); got == nil || got.Key() != key {
			t.Fatalf("Get(%q) = %v", key, got)
		}
	}
	if rs.Get("zz.io/k") != nil {
		t.Fatal("Get of a missing key")
	}
}

func TestFromLabelsAndLabels(t *testing.T) {
	labels := map[string]string{"kubernetes.io/arch": "arm64", "topology.kubernetes.io/zone": "us-east-1a", "empty": ""}
	rs := FromLabels(labels)
	if err := rs.Matches(labels); err != nil {
		t.Fatal(err)
	}
	if got := rs.Labels(); !maps.Equal(got, labels) {
		t.Fatalf("Labels() = %v, want %v", got, labels)
	}
	if got := FromNodeSelector(labels).String(); got != rs.String() {
		t.Fatalf("FromNodeSelector %s differs from FromLabels %s", got, rs)
	}
	// A multi-valued key and a complement are not labels.
	rs.Add(rq("x.io/multi", In, "a", "b"), rq("x.io/not", NotIn, "a"), rq("x.io/dne", DoesNotExist))
	if got := rs.Labels(); !maps.Equal(got, labels) {
		t.Fatalf("Labels() = %v, want %v", got, labels)
	}
	if FromLabels(nil).Len() != 0 {
		t.Fatal("FromLabels(nil) not empty")
	}
}

func TestNodeSelectorRequirementsSortedByKey(t *testing.T) {
	rs := NewRequirements(rq("z.io/k", In, "a"), rq("a.io/k", Gt, "1").Intersection(rq("a.io/k", Lt, "5")), rq("m.io/k", Exists))
	var got []string
	for _, e := range rs.NodeSelectorRequirements() {
		got = append(got, e.Key+" "+string(e.Operator))
	}
	want := []string{"a.io/k Gt", "a.io/k Lt", "m.io/k Exists", "z.io/k In"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestFromNodeSelectorTerm(t *testing.T) {
	t.Run("expressions and metadata.name", func(t *testing.T) {
		rs, err := FromNodeSelectorTerm(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
				{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"amd64"}},
			},
			MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Matches(map[string]string{"kubernetes.io/arch": "arm64", NodeNameKey: "node-1"}); err != nil {
			t.Fatal(err)
		}
		var ie *IncompatibleError
		if err := rs.Matches(map[string]string{"kubernetes.io/arch": "arm64", NodeNameKey: "node-2"}); !errors.As(err, &ie) || ie.Key != NodeNameKey {
			t.Fatalf("wrong node name matched: %v", err)
		}
		if _, ok := rs.Labels()[NodeNameKey]; ok {
			t.Fatal("pseudo key leaked into Labels()")
		}
		for _, e := range rs.NodeSelectorRequirements() {
			if strings.HasPrefix(e.Key, FieldKeyPrefix) {
				t.Fatal("pseudo key leaked into NodeSelectorRequirements()")
			}
		}
		// A node side that does not know the node name cannot place it.
		if err := FromLabels(map[string]string{"kubernetes.io/arch": "arm64"}).Compatible(rs); !errors.As(err, &ie) || ie.Key != NodeNameKey || ie.Reason != ReasonUndefined {
			t.Fatalf("got %v", err)
		}
	})
	errTests := []struct {
		name     string
		term     corev1.NodeSelectorTerm
		sentinel error
		field    string
	}{
		{"empty term", corev1.NodeSelectorTerm{}, ErrEmptyTerm, ""},
		{"bad operator", corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "a", Operator: corev1.NodeSelectorOpExists},
			{Key: "b", Operator: "Equals", Values: []string{"x"}},
		}}, ErrUnknownOperator, "matchExpressions[1].operator"},
		{"bad key", corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "a b", Operator: corev1.NodeSelectorOpExists},
		}}, ErrInvalidKey, "matchExpressions[0].key"},
		{"bad value", corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "a", Operator: corev1.NodeSelectorOpGt, Values: []string{"x"}},
		}}, ErrInvalidValues, "matchExpressions[0].values[0]"},
		{"unsupported field", corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.uid", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}},
		}}, ErrUnsupportedField, "matchFields[0].key"},
		{"field operator", corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpExists},
		}}, ErrUnsupportedField, "matchFields[0].operator"},
		{"field with two values", corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a", "b"}},
		}}, ErrUnsupportedField, "matchFields[0].values"},
	}
	for _, tc := range errTests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromNodeSelectorTerm(tc.term)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tc.sentinel) || e.Field != tc.field {
				t.Fatalf("got %v (field %q), want %v at %q", err, fieldOf(e), tc.sentinel, tc.field)
			}
		})
	}
}

func fieldOf(e *Error) string {
	if e == nil {
		return ""
	}
	return e.Field
}

func TestMinValues(t *testing.T) {
	const fam = "karpenter.k8s.aws/instance-family"
	const zone = "topology.kubernetes.io/zone"
	pool := NewRequirements(
		MustNew(fam, NotIn, []string{"t3"}, intp(3)),
		MustNew(zone, In, []string{"a", "b"}, intp(2)),
		rq("kubernetes.io/arch", In, "amd64"),
	)
	if !pool.HasMinValues() || NewRequirements(rq("k", Exists)).HasMinValues() {
		t.Fatal("HasMinValues")
	}
	it := func(family string, zones ...string) Requirements {
		return NewRequirements(rq(fam, In, family), rq(zone, In, zones...))
	}
	tests := []struct {
		name       string
		candidates []Requirements
		wantKey    string
		wantAvail  int
	}{
		{"enough", []Requirements{it("m5", "a"), it("c5", "b"), it("r5", "a", "b")}, "", 0},
		{"excluded values do not count", []Requirements{it("m5", "a", "b"), it("c5", "a"), it("t3", "a")}, fam, 2},
		{"duplicates count once", []Requirements{it("m5", "a"), it("m5", "a"), it("c5", "a"), it("r5", "a")}, zone, 1},
		{"values outside the pool do not count", []Requirements{it("m5", "a", "z"), it("c5", "a"), it("r5", "a")}, zone, 1},
		{"unconstrained candidate counts nothing", []Requirements{{}, it("m5", "a", "b"), it("c5", "a")}, fam, 2},
		{"no candidates", nil, fam, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := pool.MinValuesSatisfiedBy(tc.candidates)
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var me *MinValuesError
			if !errors.As(err, &me) || !errors.Is(err, ErrMinValuesNotMet) || me.Key != tc.wantKey || me.Available != tc.wantAvail {
				t.Fatalf("got %v, want key %q with %d available", err, tc.wantKey, tc.wantAvail)
			}
		})
	}
	// The function form sees keys in sorted order and only those with minValues.
	var asked []string
	_ = pool.MinValuesSatisfied(func(key string) int { asked = append(asked, key); return 100 })
	if !slices.Equal(asked, []string{fam, zone}) {
		t.Fatalf("asked %v", asked)
	}
}
