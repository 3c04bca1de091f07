package awsemu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// reservedLT creates a launch template whose CapacityReservationSpecification
// has the preference pref and, if target is set, targets that reservation.
func reservedLT(t *testing.T, c *ec2.Client, name, pref, target string) string {
	t.Helper()
	img := newestImage(t, c, "amazon-eks-node-al2023-x86_64-standard-*")
	spec := &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{}
	if pref != "" {
		spec.CapacityReservationPreference = ec2types.CapacityReservationPreference(pref)
	}
	if target != "" {
		spec.CapacityReservationTarget = &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(target)}
	}
	_, err := c.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: img.ImageId, CapacityReservationSpecification: spec},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	return name
}

func createReservation(t *testing.T, c *ec2.Client, typ, zone string, n int32, match ec2types.InstanceMatchCriteria, tags map[string]string) ec2types.CapacityReservation {
	t.Helper()
	in := &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String(typ), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(n), InstanceMatchCriteria: match,
	}
	if len(tags) > 0 {
		var ts []ec2types.Tag
		for k, v := range tags {
			ts = append(ts, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation, Tags: ts}}
	}
	out, err := c.CreateCapacityReservation(context.Background(), in)
	if err != nil {
		t.Fatalf("CreateCapacityReservation: %v", err)
	}
	return *out.CapacityReservation
}

func describeReservation(t *testing.T, c *ec2.Client, id string) ec2types.CapacityReservation {
	t.Helper()
	out, err := c.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil {
		t.Fatalf("DescribeCapacityReservations: %v", err)
	}
	if len(out.CapacityReservations) != 1 {
		t.Fatalf("DescribeCapacityReservations(%s): %d answers", id, len(out.CapacityReservations))
	}
	return out.CapacityReservations[0]
}

// fleetIn launches one on-demand instance of typ in the subnet through the
// launch template; it returns the instance id ("" when the fleet launched
// none) and the first error code of the answer.
func fleetIn(t *testing.T, c *ec2.Client, lt string, subnet ec2types.Subnet, typ, capType string) (string, string) {
	t.Helper()
	out, err := c.CreateFleet(context.Background(), fleetInput(lt, []ec2types.Subnet{subnet}, []string{typ}, capType))
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	id, code := "", ""
	if len(out.Instances) > 0 {
		id = out.Instances[0].InstanceIds[0]
	}
	if len(out.Errors) > 0 {
		code = aws.ToString(out.Errors[0].ErrorCode)
	}
	return id, code
}

func reservationOf(t *testing.T, c *ec2.Client, id string) string {
	t.Helper()
	out, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Reservations[0].Instances[0].CapacityReservationId)
}

// A targeted reservation through aws-sdk-go-v2: launches that target it
// count against it and the one beyond it fails with
// ReservationCapacityExceeded; a terminated instance gives its slot back;
// cancelling it refuses further targeted launches and leaves its
// instances running.
func TestTargetedCapacityReservationCountsAndRefuses(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	subnets := discoverySubnets(t, c)
	zone := aws.ToString(subnets[0].AvailabilityZone)
	cr := createReservation(t, c, "c5.2xlarge", zone, 3, ec2types.InstanceMatchCriteriaTargeted, map[string]string{"team": "ml"})
	id := aws.ToString(cr.CapacityReservationId)
	if cr.State != ec2types.CapacityReservationStateActive || aws.ToInt32(cr.AvailableInstanceCount) != 3 || aws.ToInt32(cr.TotalInstanceCount) != 3 {
		t.Fatalf("new reservation %+v", cr)
	}
	lt := reservedLT(t, c, "target", "capacity-reservations-only", id)
	var ids []string
	for i := range 3 {
		iid, code := fleetIn(t, c, lt, subnets[0], "c5.2xlarge", "on-demand")
		if iid == "" {
			t.Fatalf("launch %d into the reservation failed: %s", i+1, code)
		}
		if got := reservationOf(t, c, iid); got != id {
			t.Errorf("launch %d: capacityReservationId %q, want %q", i+1, got, id)
		}
		ids = append(ids, iid)
	}
	if got := aws.ToInt32(describeReservation(t, c, id).AvailableInstanceCount); got != 0 {
		t.Errorf("available after 3 launches: %d, want 0", got)
	}
	if iid, code := fleetIn(t, c, lt, subnets[0], "c5.2xlarge", "on-demand"); iid != "" || code != "ReservationCapacityExceeded" {
		t.Errorf("4th launch: instance %q error %q, want none and ReservationCapacityExceeded", iid, code)
	}
	// Another zone is not the reservation's.
	if iid, code := fleetIn(t, c, lt, subnets[1], "c5.2xlarge", "on-demand"); iid != "" || code != "InvalidParameterCombination" {
		t.Errorf("launch in another zone: instance %q error %q", iid, code)
	}
	// A plain on-demand launch does not use a targeted reservation.
	plain := launchTemplate(t, e, c, "plain", "x86_64", "")
	if iid, _ := fleetIn(t, c, plain, subnets[0], "c5.2xlarge", "on-demand"); iid == "" || reservationOf(t, c, iid) != "" {
		t.Errorf("plain on-demand launch %q went into the targeted reservation or failed", iid)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	if got := aws.ToInt32(describeReservation(t, c, id).AvailableInstanceCount); got != 1 {
		t.Errorf("available after a termination: %d, want 1", got)
	}
	// By tag and state, as the provider selects.
	out, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:team"), Values: []string{"ml"}}, {Name: aws.String("state"), Values: []string{"active"}},
		{Name: aws.String("instance-match-criteria"), Values: []string{"targeted"}},
	}})
	if err != nil || len(out.CapacityReservations) != 1 {
		t.Errorf("by tag: %v, %d answers", err, len(out.CapacityReservations))
	}
	if _, err := c.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	if got := describeReservation(t, c, id); got.State != ec2types.CapacityReservationStateCancelled || aws.ToInt32(got.AvailableInstanceCount) != 0 {
		t.Errorf("cancelled reservation %s, available %d", got.State, aws.ToInt32(got.AvailableInstanceCount))
	}
	if iid, code := fleetIn(t, c, lt, subnets[0], "c5.2xlarge", "on-demand"); iid != "" || code != "ReservationCapacityExceeded" {
		t.Errorf("launch into a cancelled reservation: %q %q", iid, code)
	}
	if st := stateOf(t, c, ids[1]); st != "pending" && st != "running" {
		t.Errorf("an instance of the cancelled reservation is %s", st)
	}
	_, err = c.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String("cr-0123456789abcdef0")})
	if code := apiCode(t, err); code != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("cancelling an unknown reservation: %s", code)
	}
	_, err = c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0123456789abcdef0"}})
	if code := apiCode(t, err); code != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("describing an unknown reservation: %s", code)
	}
}

// An open reservation takes matching on-demand launches without a target
// (preference open, the default), never a spot launch or one with the
// preference none; beyond it, launches are plain on-demand. A limited
// reservation expires at its end date on the emulator's clock.
func TestOpenCapacityReservationAndEndDate(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	subnets := discoverySubnets(t, c)
	zone := aws.ToString(subnets[0].AvailabilityZone)
	cr := createReservation(t, c, "m5.large", zone, 1, ec2types.InstanceMatchCriteriaOpen, nil)
	id := aws.ToString(cr.CapacityReservationId)
	none := reservedLT(t, c, "none", "none", "")
	if iid, _ := fleetIn(t, c, none, subnets[0], "m5.large", "on-demand"); iid == "" || reservationOf(t, c, iid) != "" {
		t.Errorf("preference none: %q went into the reservation or failed", iid)
	}
	plain := launchTemplate(t, e, c, "plain", "x86_64", "")
	if iid, _ := fleetIn(t, c, plain, subnets[0], "m5.large", "spot"); iid == "" || reservationOf(t, c, iid) != "" {
		t.Errorf("spot: %q went into the reservation or failed", iid)
	}
	first, _ := fleetIn(t, c, plain, subnets[0], "m5.large", "on-demand")
	if first == "" || reservationOf(t, c, first) != id {
		t.Errorf("open match: %q not in %s", first, id)
	}
	second, _ := fleetIn(t, c, plain, subnets[0], "m5.large", "on-demand")
	if second == "" || reservationOf(t, c, second) != "" {
		t.Errorf("beyond the open reservation: %q should launch outside it", second)
	}
	end := epoch.Add(2 * time.Hour)
	out, err := c.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(2), EndDateType: ec2types.EndDateTypeLimited, EndDate: aws.Time(end),
	})
	if err != nil {
		t.Fatal(err)
	}
	limited := aws.ToString(out.CapacityReservation.CapacityReservationId)
	if got := out.CapacityReservation.EndDate; got == nil || !got.Equal(end) {
		t.Errorf("end date %v, want %v", got, end)
	}
	clk.Step(2*time.Hour + time.Second)
	eventually(t, 10*time.Second, "the limited reservation expires", func() bool {
		return describeReservation(t, c, limited).State == ec2types.CapacityReservationStateExpired
	})
	// Bad input.
	_, err = c.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(0),
	})
	if code := apiCode(t, err); code != "InvalidParameterValue" {
		t.Errorf("InstanceCount 0: %s", code)
	}
	_, err = c.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(1), EndDateType: ec2types.EndDateTypeLimited,
	})
	if code := apiCode(t, err); code != "MissingParameter" {
		t.Errorf("limited without EndDate: %s", code)
	}
	rs, avail := e.CapacityReservations()
	if len(rs) != 2 || avail[0] != 0 {
		t.Errorf("CapacityReservations: %d, available %v", len(rs), avail)
	}
}

// The same calls through botocore.
func TestCapacityReservationsThroughBoto3(t *testing.T) {
	e := start(t, awsemu.Options{})
	out := boto(t, e, `
ec2 = client('ec2')
zone = ec2.describe_availability_zones()['AvailabilityZones'][0]['ZoneName']
cr = ec2.create_capacity_reservation(InstanceType='c5.2xlarge', InstancePlatform='Linux/UNIX', AvailabilityZone=zone,
    InstanceCount=3, InstanceMatchCriteria='targeted',
    TagSpecifications=[{'ResourceType': 'capacity-reservation', 'Tags': [{'Key': 'team', 'Value': 'ml'}]}])['CapacityReservation']
out['state'] = cr['State']
out['available'] = cr['AvailableInstanceCount']
out['startIsTime'] = hasattr(cr['StartDate'], 'year')
got = ec2.describe_capacity_reservations(Filters=[{'Name': 'tag:team', 'Values': ['ml']}])['CapacityReservations']
out['found'] = [r['CapacityReservationId'] == cr['CapacityReservationId'] for r in got]
out['tags'] = [t['Key'] for t in got[0]['Tags']]
out['cancel'] = ec2.cancel_capacity_reservation(CapacityReservationId=cr['CapacityReservationId'])['Return']
out['after'] = ec2.describe_capacity_reservations(CapacityReservationIds=[cr['CapacityReservationId']])['CapacityReservations'][0]['State']
out['unknown'] = code(ec2.cancel_capacity_reservation, CapacityReservationId='cr-0123456789abcdef0')
# Every element of the raw answers is a member of the model's output shape
# (botocore drops unknown ones silently).
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
created = None
for op, call, kw in [('CreateCapacityReservation', 'create_capacity_reservation', lambda: dict(InstanceType='m5.large', InstancePlatform='Linux/UNIX', AvailabilityZone=zone, InstanceCount=1)),
                     ('DescribeCapacityReservations', 'describe_capacity_reservations', lambda: {}),
                     ('CancelCapacityReservation', 'cancel_capacity_reservation', lambda: dict(CapacityReservationId=created))]:
    r = getattr(ec2, call)(**kw())
    created = created or r.get('CapacityReservation', {}).get('CapacityReservationId')
    check(ec2.meta.service_model.operation_model(op).output_shape, ET.fromstring(raw['body']), op, bad)
out['bad'] = bad
`)
	want := map[string]any{"state": "active", "available": float64(3), "startIsTime": true, "found": []any{true},
		"tags": []any{"team"}, "cancel": true, "after": "cancelled", "unknown": "InvalidCapacityReservationId.NotFound", "bad": []any{}}
	for k, v := range want {
		if fmt.Sprint(out[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, out[k], v)
		}
	}
}
