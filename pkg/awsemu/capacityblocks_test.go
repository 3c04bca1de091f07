package awsemu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// blockLT creates a launch template that targets a Capacity Block with
// the market type capacity-block.
func blockLT(t *testing.T, c *ec2.Client, name, target string) string {
	t.Helper()
	img := newestImage(t, c, "amazon-eks-node-al2023-x86_64-standard-*")
	_, err := c.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:               img.ImageId,
			InstanceMarketOptions: &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock},
			CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
				CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
				CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(target)},
			},
		},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	return name
}

// buyBlock purchases a Capacity Block of n instances of typ for hours in
// zone, through DescribeCapacityBlockOfferings and PurchaseCapacityBlock.
func buyBlock(t *testing.T, c *ec2.Client, typ, zone string, n, hours int32) ec2types.CapacityReservation {
	t.Helper()
	ctx := context.Background()
	offs, err := c.DescribeCapacityBlockOfferings(ctx, &ec2.DescribeCapacityBlockOfferingsInput{
		InstanceType: aws.String(typ), InstanceCount: aws.Int32(n), CapacityDurationHours: aws.Int32(hours),
	})
	if err != nil {
		t.Fatalf("DescribeCapacityBlockOfferings: %v", err)
	}
	var id string
	for _, o := range offs.CapacityBlockOfferings {
		if aws.ToString(o.AvailabilityZone) == zone {
			id = aws.ToString(o.CapacityBlockOfferingId)
			if got := o.EndDate.Sub(*o.StartDate); got != time.Duration(hours)*time.Hour || aws.ToInt32(o.InstanceCount) != n ||
				aws.ToInt32(o.CapacityBlockDurationHours) != hours || aws.ToString(o.UpfrontFee) == "" {
				t.Errorf("offering %+v: want %d instances for %dh with a fee", o, n, hours)
			}
		}
	}
	if id == "" {
		t.Fatalf("no offering of %s in %s among %d", typ, zone, len(offs.CapacityBlockOfferings))
	}
	out, err := c.PurchaseCapacityBlock(ctx, &ec2.PurchaseCapacityBlockInput{
		CapacityBlockOfferingId: aws.String(id), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation,
			Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}}},
	})
	if err != nil {
		t.Fatalf("PurchaseCapacityBlock: %v", err)
	}
	if len(out.CapacityBlocks) != 1 || len(out.CapacityBlocks[0].CapacityReservationIds) != 1 ||
		out.CapacityBlocks[0].CapacityReservationIds[0] != aws.ToString(out.CapacityReservation.CapacityReservationId) {
		t.Errorf("capacity blocks %+v do not name the reservation", out.CapacityBlocks)
	}
	if _, err := c.PurchaseCapacityBlock(ctx, &ec2.PurchaseCapacityBlockInput{
		CapacityBlockOfferingId: aws.String(id), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
	}); apiCode(t, err) != "InvalidParameterValue" {
		t.Errorf("buying an offering twice: %v", err)
	}
	return *out.CapacityReservation
}

// A Capacity Block through aws-sdk-go-v2: offered, bought, described as a
// targeted, limited reservation of type capacity-block; launches into it
// need the market type capacity-block; 40 minutes before its end the
// expiration warning reaches the interruption queue, 30 minutes before
// its instances terminate and it takes no launches, and at its end it
// expires.
func TestCapacityBlockLifecycle(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	subnets := discoverySubnets(t, c)
	zone := aws.ToString(subnets[0].AvailabilityZone)
	cr := buyBlock(t, c, "p5.4xlarge", zone, 2, 24)
	id := aws.ToString(cr.CapacityReservationId)
	end := epoch.Add(24 * time.Hour)
	got := describeReservation(t, c, id)
	if got.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || got.State != ec2types.CapacityReservationStateActive ||
		got.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted || got.EndDateType != ec2types.EndDateTypeLimited ||
		got.EndDate == nil || !got.EndDate.Equal(end) || aws.ToInt32(got.AvailableInstanceCount) != 2 || aws.ToString(got.CapacityBlockId) == "" ||
		len(got.Tags) != 1 {
		t.Fatalf("described block %+v", got)
	}
	lt := blockLT(t, c, "block", id)
	iid, code := fleetIn(t, c, lt, subnets[0], "p5.4xlarge", "capacity-block")
	if iid == "" {
		t.Fatalf("launch into the block failed: %s", code)
	}
	out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("capacity-reservation-id"), Values: []string{id}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 || aws.ToString(out.Reservations[0].Instances[0].InstanceId) != iid ||
		out.Reservations[0].Instances[0].InstanceLifecycle != ec2types.InstanceLifecycleTypeCapacityBlock {
		t.Fatalf("instances in the block: %+v", out.Reservations)
	}
	// An on-demand launch cannot target a block.
	if other, code := fleetIn(t, c, lt, subnets[0], "p5.4xlarge", "on-demand"); other != "" || code != "InvalidParameterValue" {
		t.Errorf("on-demand launch into the block: %q %q", other, code)
	}
	// A Capacity Block cannot be cancelled.
	if _, err := c.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(id)}); apiCode(t, err) != "InvalidParameterValue" {
		t.Errorf("cancelling a block: %v", err)
	}

	q := sqs.NewFromConfig(sdkConfig(e))
	url := queueURL(t, q, "local")
	clk.SetTime(end.Add(-awsemu.CapacityBlockWarning))
	var ev awsemu.Event
	eventually(t, 10*time.Second, "the expiration warning on the queue", func() bool {
		m, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil || len(m.Messages) == 0 {
			return false
		}
		return json.Unmarshal([]byte(aws.ToString(m.Messages[0].Body)), &ev) == nil
	})
	var detail map[string]string
	_ = json.Unmarshal(ev.Detail, &detail)
	if ev.Source != "aws.ec2" || ev.DetailType != "Capacity Block Reservation Expiration Warning" || detail["capacity-reservation-id"] != id ||
		detail["end-date"] != end.Format(time.RFC3339) || len(ev.Resources) != 1 {
		t.Errorf("warning event %+v detail %v", ev, detail)
	}
	if in, _ := e.Instance(iid); in.State == awsemu.StateShuttingDown || in.State == awsemu.StateTerminated {
		t.Errorf("the block's instance is %s at the warning, before its reclaim", in.State)
	}
	clk.SetTime(end.Add(-awsemu.CapacityBlockReclaim))
	eventually(t, 10*time.Second, "the block's instance terminates", func() bool {
		in, _ := e.Instance(iid)
		return in.State == awsemu.StateShuttingDown || in.State == awsemu.StateTerminated
	})
	if got := describeReservation(t, c, id); got.State != ec2types.CapacityReservationStateActive || aws.ToInt32(got.AvailableInstanceCount) != 0 {
		t.Errorf("reclaiming block: %s, available %d", got.State, aws.ToInt32(got.AvailableInstanceCount))
	}
	if other, code := fleetIn(t, c, lt, subnets[0], "p5.4xlarge", "capacity-block"); other != "" || code != "ReservationCapacityExceeded" {
		t.Errorf("launch in the block's last 30 minutes: %q %q", other, code)
	}
	clk.SetTime(end)
	eventually(t, 10*time.Second, "the block expires", func() bool {
		return describeReservation(t, c, id).State == ec2types.CapacityReservationStateExpired
	})
}

// DescribeCapacityBlockOfferings and PurchaseCapacityBlock refuse bad
// input with EC2's codes; a block bought for a later start is scheduled
// until then.
func TestCapacityBlockBadInputAndScheduledStart(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		in    ec2.DescribeCapacityBlockOfferingsInput
		wants string
	}{
		{"25 hours", ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("p5.4xlarge"), InstanceCount: aws.Int32(1), CapacityDurationHours: aws.Int32(25)}, "InvalidParameterValue"},
		{"15 days", ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("p5.4xlarge"), InstanceCount: aws.Int32(1), CapacityDurationHours: aws.Int32(15 * 24)}, "InvalidParameterValue"},
		{"65 instances", ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("p5.4xlarge"), InstanceCount: aws.Int32(65), CapacityDurationHours: aws.Int32(24)}, "InvalidParameterValue"},
		{"not a block type", ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("m5.large"), InstanceCount: aws.Int32(1), CapacityDurationHours: aws.Int32(24)}, "InvalidParameterValue"},
	} {
		_, err := c.DescribeCapacityBlockOfferings(ctx, &tc.in)
		if got := apiCode(t, err); got != tc.wants {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.wants)
		}
	}
	// 21 days is a 7-day step: valid.
	if _, err := c.DescribeCapacityBlockOfferings(ctx, &ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("p5.4xlarge"),
		InstanceCount: aws.Int32(1), CapacityDurationHours: aws.Int32(21 * 24)}); err != nil {
		t.Errorf("21 days: %v", err)
	}
	_, err := c.PurchaseCapacityBlock(ctx, &ec2.PurchaseCapacityBlockInput{CapacityBlockOfferingId: aws.String("cb-0123456789abcdef0"),
		InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix})
	if got := apiCode(t, err); got != "InvalidParameterValue" {
		t.Errorf("unknown offering: %s", got)
	}
	// Offerings that start tomorrow, within an end range that fits.
	startAt := epoch.Add(24 * time.Hour)
	offs, err := c.DescribeCapacityBlockOfferings(ctx, &ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("p5.4xlarge"),
		InstanceCount: aws.Int32(1), CapacityDurationHours: aws.Int32(48), StartDateRange: aws.Time(startAt), EndDateRange: aws.Time(startAt.Add(72 * time.Hour))})
	if err != nil || len(offs.CapacityBlockOfferings) == 0 {
		t.Fatalf("offerings from tomorrow: %v, %v", offs, err)
	}
	if s := offs.CapacityBlockOfferings[0].StartDate; !s.Equal(startAt) {
		t.Errorf("offering starts %v, want %v", s, startAt)
	}
	none, err := c.DescribeCapacityBlockOfferings(ctx, &ec2.DescribeCapacityBlockOfferingsInput{InstanceType: aws.String("p5.4xlarge"),
		InstanceCount: aws.Int32(1), CapacityDurationHours: aws.Int32(48), EndDateRange: aws.Time(epoch.Add(24 * time.Hour))})
	if err != nil || len(none.CapacityBlockOfferings) != 0 {
		t.Errorf("a 48h block cannot end within 24h: %d offerings, %v", len(none.CapacityBlockOfferings), err)
	}
	bought, err := c.PurchaseCapacityBlock(ctx, &ec2.PurchaseCapacityBlockInput{CapacityBlockOfferingId: offs.CapacityBlockOfferings[0].CapacityBlockOfferingId,
		InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(bought.CapacityReservation.CapacityReservationId)
	if got := describeReservation(t, c, id); got.State != ec2types.CapacityReservationStateScheduled || aws.ToInt32(got.AvailableInstanceCount) != 0 ||
		!got.StartDate.Equal(startAt) {
		t.Errorf("block before its start: %s, available %d, starts %v", got.State, aws.ToInt32(got.AvailableInstanceCount), got.StartDate)
	}
	clk.SetTime(startAt)
	eventually(t, 10*time.Second, "the block starts", func() bool {
		got := describeReservation(t, c, id)
		return got.State == ec2types.CapacityReservationStateActive && aws.ToInt32(got.AvailableInstanceCount) == 1
	})
}

// The same calls through botocore, with every element of the raw answers
// a member of the model's output shape.
func TestCapacityBlocksThroughBoto3(t *testing.T) {
	e := start(t, awsemu.Options{})
	out := boto(t, e, `
ec2 = client('ec2')
zone = ec2.describe_availability_zones()['AvailabilityZones'][0]['ZoneName']
import xml.etree.ElementTree as ET
def check(shape, el, path, bad):
    if shape.type_name == 'structure':
        names = {m.serialization.get('name', n): m for n, m in shape.members.items()}
        for c in el:
            tag = c.tag.split('}')[-1]
            if tag == 'requestId' and path.count('.') == 0:
                continue
            if tag not in names:
                bad.append(path + '.' + tag); continue
            check(names[tag], c, path + '.' + tag, bad)
    elif shape.type_name == 'list':
        for c in el:
            if c.tag.split('}')[-1] != 'item': bad.append(path + '[' + c.tag + ']')
            check(shape.member, c, path + '[]', bad)
raw = {}
ec2.meta.events.register('after-call', lambda http_response, **_: raw.update(body=http_response.content))
bad = []
offs = ec2.describe_capacity_block_offerings(InstanceType='p5.4xlarge', InstanceCount=1, CapacityDurationHours=48)['CapacityBlockOfferings']
check(ec2.meta.service_model.operation_model('DescribeCapacityBlockOfferings').output_shape, ET.fromstring(raw['body']), 'DescribeCapacityBlockOfferings', bad)
off = [o for o in offs if o['AvailabilityZone'] == zone][0]
out['hours'] = off['CapacityBlockDurationHours']
out['span'] = (off['EndDate'] - off['StartDate']).total_seconds() / 3600
r = ec2.purchase_capacity_block(CapacityBlockOfferingId=off['CapacityBlockOfferingId'], InstancePlatform='Linux/UNIX',
    TagSpecifications=[{'ResourceType': 'capacity-reservation', 'Tags': [{'Key': 'team', 'Value': 'ml'}]}])
check(ec2.meta.service_model.operation_model('PurchaseCapacityBlock').output_shape, ET.fromstring(raw['body']), 'PurchaseCapacityBlock', bad)
cr = r['CapacityReservation']
out['type'] = cr['ReservationType']
out['match'] = cr['InstanceMatchCriteria']
out['blocks'] = [b['CapacityReservationIds'] == [cr['CapacityReservationId']] for b in r['CapacityBlocks']]
got = ec2.describe_capacity_reservations(Filters=[{'Name': 'tag:team', 'Values': ['ml']}])['CapacityReservations']
out['described'] = [(g['ReservationType'], g['State']) for g in got]
out['again'] = code(ec2.purchase_capacity_block, CapacityBlockOfferingId=off['CapacityBlockOfferingId'], InstancePlatform='Linux/UNIX')
out['unknown'] = code(ec2.purchase_capacity_block, CapacityBlockOfferingId='cb-0123456789abcdef0', InstancePlatform='Linux/UNIX')
out['duration'] = code(ec2.describe_capacity_block_offerings, InstanceType='p5.4xlarge', InstanceCount=1, CapacityDurationHours=30)
out['bad'] = bad
`)
	want := map[string]any{"hours": float64(48), "span": float64(48), "type": "capacity-block", "match": "targeted",
		"blocks": []any{true}, "described": []any{[]any{"capacity-block", "active"}}, "again": "InvalidParameterValue",
		"unknown": "InvalidParameterValue", "duration": "InvalidParameterValue", "bad": []any{}}
	for k, v := range want {
		if fmt.Sprint(out[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, out[k], v)
		}
	}
}
