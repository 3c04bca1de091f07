package aws_test

import (
	"testing"
	"time"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
)

// BenchmarkLaunch measures launches per second through the provider
// against the emulator: many NodeClaims of one pool launched concurrently
// (batched into few CreateFleet calls), each returning a launched
// NodeClaim. Reported: launches/s and AWS calls per launch.
func BenchmarkLaunch(b *testing.B) {
	e := newEnv(b, envOptions{provider: awsprovider.Options{BatchIdle: 5 * time.Millisecond, BatchMax: 100 * time.Millisecond}})
	claim := func() *karpv1.NodeClaim { return e.claim(in(karpv1.CapacityTypeLabelKey, "on-demand")) }
	if _, err := e.p.Create(e.ctx, claim()); err != nil { // warm the caches
		b.Fatal(err)
	}
	e.emu.ResetCalls()
	b.SetParallelism(32)
	b.ReportAllocs()
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.p.Create(e.ctx, claim()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "launches/s")
	b.ReportMetric(float64(len(e.emu.Calls()))/float64(b.N), "calls/launch")
}
