package awsemu_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

func TestThrottleFractionIsSeededAndCounted(t *testing.T) {
	const calls = 400
	run := func(fraction float64, seed int64) []bool {
		e := start(t, awsemu.Options{})
		c := ec2.NewFromConfig(sdkConfig(e))
		e.SetThrottle(fraction, seed)
		out := make([]bool, calls)
		for i := range out {
			_, err := c.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
			switch code := apiCode(t, err); code {
			case "":
			case "RequestLimitExceeded":
				out[i] = true
			default:
				t.Fatalf("call %d: %v", i, err)
			}
		}
		throttled := 0
		for _, c := range e.Calls() {
			if c.ErrorCode == "RequestLimitExceeded" {
				throttled++
			}
		}
		if n := count(out); throttled != n {
			t.Errorf("Calls() records %d throttles, the client saw %d", throttled, n)
		}
		return out
	}
	for _, tc := range []struct {
		fraction float64
		seed     int64
	}{{0.1, 1}, {0.5, 7}, {0.9, 42}} {
		a := run(tc.fraction, tc.seed)
		// A binomial count stays within 4 standard deviations of its mean
		// except with probability < 1e-4.
		mean := tc.fraction * calls
		sd := math.Sqrt(calls * tc.fraction * (1 - tc.fraction))
		if n := float64(count(a)); math.Abs(n-mean) > 4*sd {
			t.Errorf("fraction %v: %v of %d calls throttled, want %v ± %.0f", tc.fraction, n, calls, mean, 4*sd)
		}
		if b := run(tc.fraction, tc.seed); !equal(a, b) {
			t.Errorf("fraction %v seed %d: two runs throttled different calls", tc.fraction, tc.seed)
		}
		if c := run(tc.fraction, tc.seed+1); equal(a, c) {
			t.Errorf("fraction %v: seeds %d and %d throttled the same calls", tc.fraction, tc.seed, tc.seed+1)
		}
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestThrottlesAreThrottlesToTheSDK checks that every service's throttling
// answer is one the SDK's retryer classifies as a throttle, and that with
// retries on the SDK gets through.
func TestThrottlesAreThrottlesToTheSDK(t *testing.T) {
	e := start(t, awsemu.Options{})
	cfg := sdkConfig(e)
	ctx := context.Background()
	calls := map[string]func() error{
		"ec2": func() error {
			_, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
			return err
		},
		"iam": func() error {
			_, err := iam.NewFromConfig(cfg).ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{})
			return err
		},
		"ssm": func() error {
			_, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
			return err
		},
		"sqs": func() error {
			_, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("local")})
			return err
		},
		"pricing": func() error {
			_, err := pricing.NewFromConfig(cfg).GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)})
			return err
		},
		"eks": func() error {
			_, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("local")})
			return err
		},
	}
	throttles := retry.IsErrorThrottles(retry.DefaultThrottles)
	e.SetThrottle(1, 1)
	for svc, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s: not throttled at fraction 1", svc)
			continue
		}
		if throttles.IsErrorThrottle(err) != aws.TrueTernary {
			t.Errorf("%s: the SDK does not see %q as a throttle", svc, apiCode(t, err))
		}
		var re *awshttp.ResponseError
		if svc == "ec2" && (!errors.As(err, &re) || re.HTTPStatusCode() != http.StatusServiceUnavailable) {
			t.Errorf("ec2 throttle is not HTTP 503: %v", err)
		}
	}
	// With the SDK's default retries a 30% throttle rate is invisible.
	e.SetThrottle(0.3, 3)
	retrying := e.AWSConfig()
	retrying.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 10
			o.MaxBackoff = 1
			o.RateLimiter = noRateLimit{}
		})
	}
	c := ec2.NewFromConfig(retrying)
	for i := 0; i < 20; i++ {
		if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{}}); err != nil {
			t.Fatalf("call %d failed despite retries: %v", i, err)
		}
	}
	e.ClearFaults()
	if f := e.Faults(); f.ThrottleFraction != 0 || len(f.ICE) != 0 {
		t.Errorf("faults after clear: %+v", f)
	}
}

type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}
func (noRateLimit) AddTokens(uint) error { return nil }

func TestCallsRecordIAMActions(t *testing.T) {
	e := start(t, awsemu.Options{})
	cfg := sdkConfig(e)
	ctx := context.Background()
	_, _ = ec2.NewFromConfig(cfg).DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0123456789abcdef0"}})
	_, _ = ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/bottlerocket/aws-k8s-1.37/arm64/latest/image_id")})
	_, _ = sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("local")})
	_, _ = eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("local")})
	want := []awsemu.Call{
		{Service: "ec2", Action: "ec2:DescribeImages", ErrorCode: "InvalidAMIID.NotFound"},
		{Service: "ssm", Action: "ssm:GetParameter"},
		{Service: "sqs", Action: "sqs:GetQueueUrl"},
		{Service: "eks", Action: "eks:DescribeCluster"},
	}
	got := e.Calls()
	if len(got) != len(want) {
		t.Fatalf("calls %+v", got)
	}
	for i := range want {
		if got[i].Service != want[i].Service || got[i].Action != want[i].Action || got[i].ErrorCode != want[i].ErrorCode || got[i].Time.IsZero() {
			t.Errorf("call %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAdminAPI(t *testing.T) {
	e := start(t, awsemu.Options{})
	a := e.AdminClient()
	ctx := context.Background()
	h, err := a.Health(ctx)
	if err != nil || !h.OK || h.ClusterName != "local" || h.QueueURL == "" {
		t.Fatalf("health %+v %v", h, err)
	}
	if _, err := a.InjectICE(ctx, awsemu.ICERule{InstanceType: "m5.large", CapacityType: "spot"}); err != nil {
		t.Fatal(err)
	}
	f, err := a.SetThrottle(ctx, 0.25, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.ICE) != 1 || f.ICE[0].InstanceType != "m5.large" || f.ThrottleFraction != 0.25 || f.ThrottleSeed != 9 {
		t.Errorf("faults %+v", f)
	}
	var se *awsemu.AdminStatusError
	if _, err := a.SetThrottle(ctx, 1.5, 0); !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Errorf("fraction 1.5: %v", err)
	}
	if _, err := a.InjectICE(ctx, awsemu.ICERule{CapacityType: "reserved"}); !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Errorf("capacity type reserved: %v", err)
	}
	if err := a.Interrupt(ctx, "ip-10-9-9-9.ec2.internal", awsemu.KindRebalance); !errors.As(err, &se) || se.Status != http.StatusNotFound {
		t.Errorf("unknown node: %v", err)
	}
	if f, err := a.ClearFaults(ctx); err != nil || len(f.ICE) != 0 || f.ThrottleFraction != 0 {
		t.Errorf("clear: %+v %v", f, err)
	}
	if e.Faults().ThrottleFraction != 0 {
		t.Error("the emulator still throttles")
	}
	if _, err := (&awsemu.AdminClient{Endpoint: "http://127.0.0.1:1"}).Health(ctx); err == nil {
		t.Error("health of a closed port succeeded")
	}
}
