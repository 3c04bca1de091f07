package catalog

import "testing"

// BenchmarkDecodeBuiltin measures the one-time cost of Builtin: decoding the
// embedded catalog and building every type's labels. Target: well under 30 ms.
func BenchmarkDecodeBuiltin(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(builtinData)))
	for b.Loop() {
		if _, err := Decode(builtinData); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInstanceTypesUSEast1 measures one NodePool refresh: every type
// offered in all six us-east-1 zones with default kubelet settings. Target: a
// few milliseconds.
func BenchmarkInstanceTypesUSEast1(b *testing.B) {
	c := Builtin()
	b.ReportAllocs()
	for b.Loop() {
		if its := c.InstanceTypes("us-east-1", nil, KubeletSettings{}); len(its) == 0 {
			b.Fatal("no instance types")
		}
	}
}

// BenchmarkInstanceTypesUSEast1Kubelet is the same refresh with kubelet
// overrides that exercise every parsing path.
func BenchmarkInstanceTypesUSEast1Kubelet(b *testing.B) {
	c := Builtin()
	maxPods := int32(110)
	s := KubeletSettings{
		MaxPods:        &maxPods,
		KubeReserved:   map[string]string{"cpu": "100m", "memory": "1Gi"},
		SystemReserved: map[string]string{"memory": "200Mi"},
		EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "15%"},
		EvictionSoft:   map[string]string{"memory.available": "500Mi"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if its := c.InstanceTypes("us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c"}, s); len(its) == 0 {
			b.Fatal("no instance types")
		}
	}
}
