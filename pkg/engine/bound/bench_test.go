package bound

import (
	"testing"
)

// BenchmarkSolve measures Solve on benchmark.md's reference workload at 1k,
// 20k and 100k pods and on an EC2-like catalog (about 800 types x 6 zones x
// spot/on-demand) with 20k pods. Problem construction is outside the timer.
func BenchmarkSolve(b *testing.B) {
	cases := []struct {
		name string
		p    *Problem
	}{
		{"reference-1k", referenceProblem(1_000)},
		{"reference-20k", referenceProblem(20_000)},
		{"reference-100k", referenceProblem(100_000)},
		{"ec2like-20k", ec2LikeProblem(20_000)},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var res Result
			var err error
			b.ReportAllocs()
			for b.Loop() {
				res, err = Solve(tc.p)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Rounds), "rounds")
			b.ReportMetric(float64(res.Rows), "rows")
			b.ReportMetric(float64(res.Offerings), "offerings")
			b.ReportMetric(float64(res.Columns), "columns")
			if !res.Converged {
				b.Logf("%s: not converged: bound %.4f LP %.4f", tc.name, res.LowerBound, res.LPValue)
			}
		})
	}
}
