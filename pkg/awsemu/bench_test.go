package awsemu_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// benchTypes are 20 types, which with the three seeded subnets make the 60
// overrides of a typical Karpenter-sized launch request.
var benchTypes = []string{
	"c5.large", "c5.xlarge", "c5a.large", "c5a.xlarge", "c6a.large", "c6a.xlarge", "c6i.large", "c6i.xlarge", "c7i.large", "c7i.xlarge",
	"m5.large", "m5.xlarge", "m5a.large", "m5a.xlarge", "m6a.large", "m6a.xlarge", "m6i.large", "m6i.xlarge", "m7i.large", "m7i.xlarge",
}

// BenchmarkCreateFleet measures launches per second through the emulator:
// one spot CreateFleet (capacity 1, 60 overrides) per operation, sent by
// aws-sdk-go-v2 over loopback HTTP.
func BenchmarkCreateFleet(b *testing.B) {
	e := start(b, awsemu.Options{TimeScale: 0.001, TerminatedRetention: time.Millisecond})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(b, e, c, "bench", "x86_64", "")
	in := fleetInput(lt, discoverySubnets(b, c), benchTypes, "spot")
	ctx := context.Background()
	var ids []string
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := c.CreateFleet(ctx, in)
		if err != nil || len(out.Instances) != 1 {
			b.Fatalf("launch %d: %v %+v", i, err, out)
		}
		ids = append(ids, out.Instances[0].InstanceIds...)
		if len(ids) == 1000 { // keep the subnet's addresses from running out
			b.StopTimer()
			if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
				b.Fatal(err)
			}
			ids = ids[:0]
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "launches/s")
}

// BenchmarkCreateFleetParallel is BenchmarkCreateFleet with concurrent
// clients, as a controller launching many NodeClaims at once would send.
func BenchmarkCreateFleetParallel(b *testing.B) {
	e := start(b, awsemu.Options{TimeScale: 0.001, TerminatedRetention: time.Millisecond})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(b, e, c, "bench", "x86_64", "")
	in := fleetInput(lt, discoverySubnets(b, c), benchTypes, "on-demand")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			out, err := c.CreateFleet(context.Background(), in)
			if err != nil || len(out.Instances) != 1 {
				b.Errorf("launch: %v %+v", err, out)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "launches/s")
}
