package sdk_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/sdk"
)

// TestThrottledCallsSucceed makes 300 calls with 30% of all requests
// throttled (seeded): every call must succeed, the retry token bucket must
// not run dry, and the attempts stay near the expected 1/(1-0.3) ≈ 1.43
// per call.
func TestThrottledCallsSucceed(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{Seed: 1})
	clients := awstest.Clients(e)
	e.SetThrottle(0.3, 42)
	e.ResetCalls()
	const n = 300
	ctx := context.Background()
	for i := range n {
		_, err := clients.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{
			Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{awstest.ClusterName}}},
		})
		if err != nil {
			t.Fatalf("call %d failed despite retries: %v", i, err)
		}
	}
	calls := e.Calls()
	throttled := 0
	for _, c := range calls {
		if c.ErrorCode != "" {
			throttled++
		}
	}
	t.Logf("%d calls took %d attempts (%d throttled)", n, len(calls), throttled)
	if len(calls) != n+throttled {
		t.Errorf("attempts %d != calls %d + throttled %d", len(calls), n, throttled)
	}
	if float64(len(calls)) > 1.8*n {
		t.Errorf("%d attempts for %d calls; expected about %.0f", len(calls), n, n/0.7)
	}
}

func TestPricingRegion(t *testing.T) {
	for region, want := range map[string]string{"us-east-1": "us-east-1", "eu-west-1": "us-east-1", "cn-north-1": "cn-northwest-1"} {
		if got := sdk.PricingRegion(region); got != want {
			t.Errorf("PricingRegion(%s) = %s, want %s", region, got, want)
		}
	}
}
