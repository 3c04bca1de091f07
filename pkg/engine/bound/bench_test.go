package bound

import (
	"testing"
)

// BenchmarkSolve measures Solve (validation included) on benchmark.md's
// reference workload at 1k, 20k and 100k pods and on an EC2-like catalog
// (about 800 types x 6 zones x spot/on-demand) with 20k pods, and on 100 and
// 300 distinct groups there (clustered mode). Building the
// problem is outside the timer. Besides ns/op it reports cpu-ns/op (process
// CPU time, the honest figure on a shared machine) and the solver's sizes.
func BenchmarkSolve(b *testing.B) {
	cases := []struct {
		name string
		p    func() *Problem
	}{
		{"reference-1k", func() *Problem { return referenceProblem(1_000) }},
		{"reference-20k", func() *Problem { return referenceProblem(20_000) }},
		{"reference-100k", func() *Problem { return referenceProblem(100_000) }},
		{"ec2like-20k", func() *Problem { return ec2LikeProblem(20_000) }},
		{"distinct-100groups", func() *Problem { return distinctProblem(100, 3) }},
		{"distinct-300groups", func() *Problem { return distinctProblem(300, 3) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			p := tc.p()
			var res Result
			var err error
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				res, err = Solve(p)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(res.Rounds), "rounds")
			b.ReportMetric(float64(res.Pivots), "pivots")
			b.ReportMetric(float64(res.Rows), "rows")
			b.ReportMetric(float64(res.Groups), "groups")
			b.ReportMetric(float64(res.Offerings), "offerings")
			if !res.Converged {
				b.Logf("%s: not converged: bound %.4f", tc.name, res.LowerBound)
			}
		})
	}
}

// BenchmarkSolveSmall: the reference mix at about 100 pods, the size of a
// typical scale-up, where the engine's plan must be within 1.10x of the bound.
func BenchmarkSolveSmall(b *testing.B) {
	p := referenceProblem(100)
	var res Result
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		var err error
		if res, err = Solve(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(res.Rounds), "rounds")
	b.ReportMetric(float64(res.Rows), "rows")
}
