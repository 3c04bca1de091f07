package metrics_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// BenchmarkNodeGaugesRetained reports the heap each node's capacity series
// keep (retained-B/node), for 3,000 nodes of six allocatable resources and
// three requests: NodeGauges against the GaugeVecs it replaced.
func BenchmarkNodeGaugesRetained(b *testing.B) {
	const nodes = 3000
	resources := []string{"cpu", "memory", "pods", "ephemeral-storage", "hugepages-1Gi", "hugepages-2Mi"}
	labels := []string{metrics.LabelNodeName, metrics.LabelNodePool, metrics.LabelResourceType, metrics.LabelCapacityType, metrics.LabelInstanceType, metrics.LabelZone}
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("ip-10-0-%d-%d.us-west-2.compute.internal", i/250, i%250)
	}
	retained := func(b *testing.B, fill func() any) {
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keep := fill()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(keep)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nodes, "retained-B/node")
		}
	}
	b.Run("gaugevec", func(b *testing.B) {
		retained(b, func() any {
			alloc := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "a", Help: "a"}, labels)
			req := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "r", Help: "r"}, labels)
			for _, n := range names {
				for _, r := range resources {
					alloc.WithLabelValues(n, "default", r, "spot", "m5.large", "us-west-2a").Set(1)
				}
				for _, r := range resources[:3] {
					req.WithLabelValues(n, "default", r, "spot", "m5.large", "us-west-2a").Set(1)
				}
			}
			return []any{alloc, req}
		})
	})
	b.Run("nodegauges", func(b *testing.B) {
		retained(b, func() any {
			reg := metrics.NewRegistry()
			l := metrics.NodeLabels{NodePool: "default", CapacityType: "spot", InstanceType: "m5.large", Zone: "us-west-2a"}
			for _, n := range names {
				alloc := make([]metrics.NodeValue, 0, len(resources))
				for _, r := range resources {
					alloc = append(alloc, metrics.NodeValue{Resource: r, Value: 1})
				}
				req := make([]metrics.NodeValue, 0, 3)
				for _, r := range resources[:3] {
					req = append(req, metrics.NodeValue{Resource: r, Value: 1})
				}
				reg.Nodes.Set(n, l, alloc, req)
			}
			return reg
		})
	})
}
