package awsemu_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// A CreateFleet client token behaves as EC2 documents: the same token
// with the same parameters answers the first request's fleet and
// instances again and launches nothing; with other parameters it is
// IdempotentParameterMismatch (400); a request that failed as a whole
// (throttled) binds nothing; a fleet that launched nothing is answered
// again as it was; a token over 64 characters or not ASCII is refused.
func TestCreateFleetClientToken(t *testing.T) {
	ctx := context.Background()
	e := start(t, awsemu.Options{Seed: 5})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(t, e, c, "tokens", "x86_64", "")
	subnets := discoverySubnets(t, c)
	live := func() int {
		n := 0
		for _, in := range e.Instances() {
			if in.State == "pending" || in.State == "running" {
				n++
			}
		}
		return n
	}

	in := fleetInput(lt, subnets, []string{"m5.large", "c5.large"}, "on-demand")
	in.ClientToken = aws.String("nodeclaim-uid-1")
	first, err := c.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	launched(t, c, first)
	again, err := c.CreateFleet(ctx, in)
	if err != nil {
		t.Fatalf("repeat with the same token and parameters: %v", err)
	}
	if aws.ToString(again.FleetId) != aws.ToString(first.FleetId) ||
		again.Instances[0].InstanceIds[0] != first.Instances[0].InstanceIds[0] {
		t.Errorf("repeat answered fleet %s instance %v, want the first answer's %s %v",
			aws.ToString(again.FleetId), again.Instances[0].InstanceIds, aws.ToString(first.FleetId), first.Instances[0].InstanceIds)
	}
	if n := live(); n != 1 {
		t.Errorf("%d instances after the repeat, want 1", n)
	}
	if n := len(e.FleetRequests()); n != 1 {
		t.Errorf("%d fleets recorded, want 1 (a repeat is the same fleet)", n)
	}

	// Other parameters (one override fewer, as after an ICE) with the
	// same token.
	changed := fleetInput(lt, subnets, []string{"m5.large"}, "on-demand")
	changed.ClientToken = in.ClientToken
	if _, err := c.CreateFleet(ctx, changed); apiCode(t, err) != "IdempotentParameterMismatch" {
		t.Errorf("same token, other parameters: %v, want IdempotentParameterMismatch", err)
	} else if !strings.Contains(err.Error(), "StatusCode: 400") {
		t.Errorf("mismatch error %v, want HTTP 400", err)
	}
	// Another token launches again.
	changed.ClientToken = aws.String("nodeclaim-uid-2")
	if _, err := c.CreateFleet(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 2 {
		t.Errorf("%d instances after a second token, want 2", n)
	}

	// A throttled request binds nothing: the same token works afterwards
	// and launches once.
	e.SetThrottle(1, 1)
	th := fleetInput(lt, subnets, []string{"c5.large"}, "on-demand")
	th.ClientToken = aws.String("throttled")
	if _, err := c.CreateFleet(ctx, th); apiCode(t, err) != "RequestLimitExceeded" {
		t.Fatalf("throttled: %v", err)
	}
	e.ClearFaults()
	if _, err := c.CreateFleet(ctx, th); err != nil {
		t.Fatalf("after the throttle: %v", err)
	}
	if n := live(); n != 3 {
		t.Errorf("%d instances after the throttled token's launch, want 3", n)
	}

	// A fleet that launched nothing (ICE) is answered again as it was,
	// even once the capacity is back: the token is spent.
	e.InjectICE("r5.large", "", "on-demand")
	ice := fleetInput(lt, subnets, []string{"r5.large"}, "on-demand")
	ice.ClientToken = aws.String("iced")
	out, err := c.CreateFleet(ctx, ice)
	if err != nil || len(out.Instances) != 0 || len(out.Errors) == 0 {
		t.Fatalf("ICE'd fleet: %v, %d instances, %d errors", err, len(out.Instances), len(out.Errors))
	}
	e.ClearFaults()
	out2, err := c.CreateFleet(ctx, ice)
	if err != nil || len(out2.Instances) != 0 || aws.ToString(out2.FleetId) != aws.ToString(out.FleetId) {
		t.Errorf("repeat of the ICE'd fleet: %v, %d instances, fleet %s (first %s)", err, len(out2.Instances), aws.ToString(out2.FleetId), aws.ToString(out.FleetId))
	}

	for _, bad := range []string{strings.Repeat("a", 65), "caf\u00e9", "tab\there"} {
		b := fleetInput(lt, subnets, []string{"m5.large"}, "on-demand")
		b.ClientToken = aws.String(bad)
		if _, err := c.CreateFleet(ctx, b); apiCode(t, err) != "InvalidParameterValue" {
			t.Errorf("token %q: %v, want InvalidParameterValue", bad, err)
		}
	}
	ok := fleetInput(lt, subnets, []string{"m5.large"}, "on-demand")
	ok.ClientToken = aws.String(strings.Repeat("Z", 64))
	if _, err := c.CreateFleet(ctx, ok); err != nil {
		t.Errorf("a 64-character token: %v", err)
	}
}

// RunInstances honours its client token the same way.
func TestRunInstancesClientToken(t *testing.T) {
	ctx := context.Background()
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	img := newestImage(t, c, "amazon-eks-node-al2023-x86_64-standard-*")
	in := &ec2.RunInstancesInput{ImageId: img.ImageId, InstanceType: ec2types.InstanceTypeM5Large,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String("run-1")}
	first, err := c.RunInstances(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.RunInstances(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(again.Instances[0].InstanceId) != aws.ToString(first.Instances[0].InstanceId) {
		t.Errorf("repeat launched %s, want %s", aws.ToString(again.Instances[0].InstanceId), aws.ToString(first.Instances[0].InstanceId))
	}
	if n := len(e.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
	in.InstanceType = ec2types.InstanceTypeC5Large
	if _, err := c.RunInstances(ctx, in); apiCode(t, err) != "IdempotentParameterMismatch" {
		t.Errorf("same token, other type: %v, want IdempotentParameterMismatch", err)
	}
}
