package engine_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// benchSolve runs the whole solve (construction, improvement and the lower
// bound) b.N times and reports pods/s, nodes, $/h, the bound and the gap.
func benchSolve(b *testing.B, in *engine.Input) {
	b.Helper()
	b.ReportAllocs()
	var plan *engine.Plan
	b.ResetTimer()
	for b.Loop() {
		var err error
		plan, err = engine.Solve(in)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(plan.Unschedulable) > 0 {
		b.Fatalf("%d pods unschedulable, first %+v", len(plan.Unschedulable), plan.Unschedulable[0])
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(in.Pods))/perOp, "pods/s")
	b.ReportMetric(float64(len(plan.NodeClaims)), "nodes")
	b.ReportMetric(plan.PricePerHour, "$/h")
	b.ReportMetric(plan.LowerBound, "bound")
	if plan.LowerBound > 0 {
		b.ReportMetric(plan.PricePerHour/plan.LowerBound, "gap")
	}
}

// BenchmarkSolveReference is the peer's reference workload (benchmark.md):
// five kinds of pods over 400 synthetic types, seed 42.
func BenchmarkSolveReference(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000, 100000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			benchSolve(b, workload.Reference(n, workload.ReferenceSeed))
		})
	}
}

// BenchmarkSolvePreferences is the "preferences" shape: 4,000 pods with
// preferred zone affinity and preferred zone and hostname anti-affinity.
func BenchmarkSolvePreferences(b *testing.B) {
	benchSolve(b, workload.Preferences(4000, workload.ReferenceSeed))
}

// BenchmarkSolveMixed solves the large mixed workloads over the built-in
// us-east-1 catalog.
func BenchmarkSolveMixed(b *testing.B) {
	for _, m := range workload.MixedScenarios() {
		if m.Pods < 1000 {
			continue
		}
		b.Run(m.Name, func(b *testing.B) { benchSolve(b, m.Input()) })
	}
}

// BenchmarkSolveManyPools: a few pods and many NodePools of one tier, all
// offering the same types (the hostile-input issue's 5,000 pools): the
// work per pool must stay small, and the lower bound must not grow with
// pools x types.
func BenchmarkSolveManyPools(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("pools=%d", n), func(b *testing.B) {
			in := workload.Reference(30, workload.ReferenceSeed)
			base := in.NodePools[0]
			in.NodePools = make([]engine.NodePool, n)
			for i := range in.NodePools {
				np := base
				np.Name = fmt.Sprintf("pool-%d", i)
				in.NodePools[i] = np
			}
			benchSolve(b, in)
		})
	}
	// One pool per team: a label and a limit of its own; every tenth pool
	// weighs more, and pods of one team select its pool.
	b.Run("teams=5000", func(b *testing.B) {
		in := workload.Reference(30, workload.ReferenceSeed)
		base := in.NodePools[0]
		in.NodePools = make([]engine.NodePool, 5000)
		for i := range in.NodePools {
			np := base
			np.Name = fmt.Sprintf("team-%d", i)
			np.Labels = map[string]string{"team": fmt.Sprint(i)}
			np.Weight = int32(i % 10 / 9)
			np.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(100 + i))}
			in.NodePools[i] = np
		}
		for i := range in.Pods {
			if i%3 == 0 {
				p := in.Pods[i].DeepCopy()
				p.Spec.NodeSelector = map[string]string{"team": fmt.Sprint(i * 7)}
				in.Pods[i] = p
			}
		}
		benchSolve(b, in)
	})
}
