package requirements

import (
	"strconv"
	"testing"
)

// Benchmarks for the calls the scheduling engine makes in its hot loops.
// Run: go test -run '^$' -bench . -benchmem ./pkg/requirements/

var sink any

func BenchmarkHas(b *testing.B) {
	many := make([]string, 32)
	for i := range many {
		many[i] = "value-" + strconv.Itoa(i)
	}
	cases := []struct {
		name  string
		r     *Requirement
		value string
	}{
		{"In4/hit", MustNew("k", In, []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}, nil), "us-east-1c"},
		{"In4/miss", MustNew("k", In, []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}, nil), "us-west-2a"},
		{"In8/miss", MustNew("k", In, many[:8], nil), "nope"},
		{"In32/hit", MustNew("k", In, many, nil), "value-17"},
		{"NotIn2", MustNew("k", NotIn, []string{"t3", "t3a"}, nil), "m7g"},
		{"Exists", MustNew("k", Exists, nil, nil), "x"},
		{"GtLt/integer", MustNew("k", Gt, []string{"3"}, nil).Intersection(MustNew("k", Lt, []string{"65"}, nil)), "16"},
		{"Gt/non-integer", MustNew("k", Gt, []string{"3"}, nil), "large"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			ok := false
			for b.Loop() {
				ok = c.r.Has(c.value)
			}
			sink = ok
		})
	}
}

func BenchmarkIntersection(b *testing.B) {
	zones := MustNew("topology.kubernetes.io/zone", In, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, nil)
	cases := []struct {
		name string
		x, y *Requirement
	}{
		{"In∩In/overlap", zones, MustNew("topology.kubernetes.io/zone", In, []string{"us-east-1b", "us-east-1c", "us-east-1d"}, nil)},
		{"In∩In/subset", zones, MustNew("topology.kubernetes.io/zone", In, []string{"us-east-1b"}, nil)},
		{"In∩NotIn", zones, MustNew("topology.kubernetes.io/zone", NotIn, []string{"us-east-1a"}, nil)},
		{"In∩Exists", zones, MustNew("topology.kubernetes.io/zone", Exists, nil, nil)},
		{"NotIn∩NotIn", MustNew("k", NotIn, []string{"a", "c"}, nil), MustNew("k", NotIn, []string{"b"}, nil)},
		{"Gt∩Lt", MustNew("k", Gt, []string{"3"}, nil), MustNew("k", Lt, []string{"65"}, nil)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var r *Requirement
			for b.Loop() {
				r = c.x.Intersection(c.y)
			}
			sink = r
		})
	}
	pool, it := benchPool(), benchInstanceType()
	b.Run("Requirements/pool∩instanceType", func(b *testing.B) {
		b.ReportAllocs()
		var r Requirements
		for b.Loop() {
			r = pool.Intersection(it)
		}
		sink = r
	})
}

// benchPool is a NodePool-like set of 8 keys.
func benchPool() Requirements {
	return NewRequirements(
		MustNew("kubernetes.io/arch", In, []string{"amd64", "arm64"}, nil),
		MustNew("kubernetes.io/os", In, []string{"linux"}, nil),
		MustNew("karpenter.sh/capacity-type", In, []string{"spot", "on-demand"}, nil),
		MustNew("karpenter.sh/nodepool", In, []string{"default"}, nil),
		MustNew("karpenter.k8s.aws/instance-category", In, []string{"c", "m", "r"}, nil),
		MustNew("karpenter.k8s.aws/instance-generation", Gt, []string{"4"}, nil),
		MustNew("karpenter.k8s.aws/instance-family", NotIn, []string{"t3", "t3a"}, intp(3)),
		MustNew("topology.kubernetes.io/zone", In, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, nil),
	)
}

// benchInstanceType is the label set of one instance type.
func benchInstanceType() Requirements {
	return FromLabels(map[string]string{
		"kubernetes.io/arch":                    "arm64",
		"kubernetes.io/os":                      "linux",
		"node.kubernetes.io/instance-type":      "m7g.large",
		"karpenter.k8s.aws/instance-category":   "m",
		"karpenter.k8s.aws/instance-family":     "m7g",
		"karpenter.k8s.aws/instance-generation": "7",
		"karpenter.k8s.aws/instance-size":       "large",
		"karpenter.k8s.aws/instance-cpu":        "2",
		"karpenter.k8s.aws/instance-memory":     "8192",
	})
}

func BenchmarkCompatible(b *testing.B) {
	pool := benchPool()
	pod := NewRequirements(
		MustNew("kubernetes.io/arch", In, []string{"arm64"}, nil),
		MustNew("topology.kubernetes.io/zone", In, []string{"us-east-1b"}, nil),
		MustNew("karpenter.sh/capacity-type", NotIn, []string{"spot"}, nil),
	)
	badPod := NewRequirements(MustNew("kubernetes.io/arch", In, []string{"s390x"}, nil))
	it := benchInstanceType()
	cases := []struct {
		name     string
		node, in Requirements
	}{
		{"pool/pod3/ok", pool, pod},
		{"pool/pod1/incompatible", pool, badPod},
		{"instanceType/pool/ok", it.Intersection(FromLabels(map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot", "topology.kubernetes.io/zone": "us-east-1a"})), pool},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var err error
			for b.Loop() {
				err = c.node.Compatible(c.in)
			}
			sink = err
		})
	}
}

func BenchmarkMatches(b *testing.B) {
	pool := benchPool()
	labels := map[string]string{
		"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux", "karpenter.sh/capacity-type": "spot",
		"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/instance-category": "m",
		"karpenter.k8s.aws/instance-generation": "7", "karpenter.k8s.aws/instance-family": "m7g",
		"topology.kubernetes.io/zone": "us-east-1a",
	}
	b.ReportAllocs()
	var err error
	for b.Loop() {
		err = pool.Matches(labels)
	}
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkNew(b *testing.B) {
	vals := []string{"us-east-1c", "us-east-1a", "us-east-1b"}
	b.ReportAllocs()
	var r *Requirement
	for b.Loop() {
		r, _ = New("topology.kubernetes.io/zone", In, vals, nil)
	}
	sink = r
}
