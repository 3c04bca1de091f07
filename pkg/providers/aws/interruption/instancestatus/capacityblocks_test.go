package instancestatus_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/instancestatus"
)

// A Capacity Block's instances are reported as one scheduled change from
// 40 minutes before the block's end (the time of EC2's expiration
// warning), with NotBefore when EC2 starts terminating them (30 minutes
// before the end); not earlier, and not for an ODCR's instances.
func TestCapacityBlockExpirationIsAScheduledChange(t *testing.T) {
	epoch := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clk := clocktesting.NewFakeClock(epoch)
	e, _ := awstest.Start(t, awsemu.Options{Seed: 5, Clock: clk, TimeScale: 1})
	c := awstest.Clients(e).EC2
	ctx := context.Background()
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{awstest.ClusterName}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("subnets: %v", err)
	}
	subnet := subnets.Subnets[0]
	offs, err := c.DescribeCapacityBlockOfferings(ctx, &ec2.DescribeCapacityBlockOfferingsInput{
		InstanceType: aws.String("p5.4xlarge"), InstanceCount: aws.Int32(2), CapacityDurationHours: aws.Int32(24)})
	if err != nil {
		t.Fatal(err)
	}
	var offering *string
	for _, o := range offs.CapacityBlockOfferings {
		if aws.ToString(o.AvailabilityZone) == aws.ToString(subnet.AvailabilityZone) {
			offering = o.CapacityBlockOfferingId
		}
	}
	bought, err := c.PurchaseCapacityBlock(ctx, &ec2.PurchaseCapacityBlockInput{CapacityBlockOfferingId: offering, InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix})
	if err != nil {
		t.Fatal(err)
	}
	block, end := aws.ToString(bought.CapacityReservation.CapacityReservationId), aws.ToTime(bought.CapacityReservation.EndDate)
	images, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("images: %v", err)
	}
	run, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: images.Images[0].ImageId, InstanceType: ec2types.InstanceTypeP54xlarge, MinCount: aws.Int32(2), MaxCount: aws.Int32(2),
		SubnetId: subnet.SubnetId, InstanceMarketOptions: &ec2types.InstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock},
		CapacityReservationSpecification: &ec2types.CapacityReservationSpecification{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(block)}},
	})
	if err != nil {
		t.Fatalf("RunInstances into the block: %v", err)
	}
	want := map[string]bool{}
	for _, in := range run.Instances {
		want[aws.ToString(in.InstanceId)] = true
	}
	// An ODCR ending at the same time is not a Capacity Block: its
	// instances keep running as on-demand.
	if _, err := c.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: subnet.AvailabilityZone, InstanceCount: aws.Int32(1), EndDateType: ec2types.EndDateTypeLimited, EndDate: aws.Time(end),
	}); err != nil {
		t.Fatal(err)
	}
	awstest.Launch(t, e, 1)
	src := &instancestatus.Events{EC2: c, Clock: clk}
	blockEvents := func() []cloudprovider.InterruptionEvent {
		t.Helper()
		evs, err := src.ScheduledEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	clk.SetTime(end.Add(-41 * time.Minute))
	if evs := blockEvents(); len(evs) != 0 {
		t.Errorf("41 minutes before the end: %+v, want none", evs)
	}
	clk.SetTime(end.Add(-40 * time.Minute))
	evs := blockEvents()
	if len(evs) != 1 {
		t.Fatalf("40 minutes before the end: %+v, want one event", evs)
	}
	ev := evs[0]
	if ev.ID != "capacity-block-expiration/"+block || ev.Kind != cloudprovider.InterruptionScheduledChange || !ev.Disruptive() ||
		ev.State != instancestatus.StateCapacityBlockExpiring || !ev.NotBefore.Equal(end.Add(-30*time.Minute)) || len(ev.InstanceIDs) != 2 {
		t.Errorf("event %+v", ev)
	}
	for _, id := range ev.InstanceIDs {
		if !want[id] {
			t.Errorf("instance %s is not in the block (%v)", id, want)
		}
	}
	// Once EC2 has terminated them, nothing is left to report.
	clk.SetTime(end.Add(-29 * time.Minute))
	var left []cloudprovider.InterruptionEvent
	for range 100 {
		if left = blockEvents(); len(left) == 0 {
			break
		}
		clk.Step(time.Second)
	}
	if len(left) != 0 {
		t.Errorf("after the reclaim: %+v", left)
	}
}
