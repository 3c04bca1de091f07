package aws_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// buyBlock buys a Capacity Block of n p5.4xlarge for 24 hours in zone
// through the SDK and returns its reservation.
func buyBlock(t *testing.T, e *env, c *ec2.Client, zone string, n int32) ec2types.CapacityReservation {
	t.Helper()
	offs, err := c.DescribeCapacityBlockOfferings(e.ctx, &ec2.DescribeCapacityBlockOfferingsInput{
		InstanceType: aws.String("p5.4xlarge"), InstanceCount: aws.Int32(n), CapacityDurationHours: aws.Int32(24),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs.CapacityBlockOfferings {
		if aws.ToString(o.AvailabilityZone) != zone {
			continue
		}
		out, err := c.PurchaseCapacityBlock(e.ctx, &ec2.PurchaseCapacityBlockInput{
			CapacityBlockOfferingId: o.CapacityBlockOfferingId, InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		})
		if err != nil {
			t.Fatal(err)
		}
		return *out.CapacityReservation
	}
	t.Fatalf("no Capacity Block offering in %s", zone)
	return ec2types.CapacityReservation{}
}

// reservedOfferings are the reserved offerings of a type.
func reservedOfferings(types []*cloudprovider.InstanceType, name string) []cloudprovider.Offering {
	var out []cloudprovider.Offering
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeReserved {
				out = append(out, o)
			}
		}
	}
	return out
}

// A Capacity Block bought through the SDK and selected by a class's
// capacityReservationSelectorTerms: the class lists it with type
// capacity-block, state active and its end; its type gets a reserved
// offering of reservation type capacity-block (a class that does not
// select it gets none); a reserved launch goes into it as a
// capacity-block fleet and its NodeClaim is labelled capacity-block. From
// 40 minutes before its end the class lists it as expiring and its
// offering is unavailable.
func TestCapacityBlockOfferingsLaunchAndExpiry(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.testCalls = map[string]bool{"ec2:DescribeCapacityBlockOfferings": true, "ec2:PurchaseCapacityBlock": true}
	c := ec2.NewFromConfig(e.cfg)
	zone := e.class.Status.Subnets[0].Zone
	cr := buyBlock(t, e, c, zone, 2)
	id, end := aws.ToString(cr.CapacityReservationId), aws.ToTime(cr.EndDate)
	if types, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class)); err != nil {
		t.Fatal(err)
	} else if offs := reservedOfferings(types, "p5.4xlarge"); len(offs) != 0 {
		t.Errorf("a class that selects no reservation has reserved offerings %+v", offs)
	}
	spec := discoverySpec()
	spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: id}}
	class := e.createClass(spec)
	if crs := class.Status.CapacityReservations; len(crs) != 1 || crs[0].ReservationType != "capacity-block" || crs[0].State != "active" ||
		crs[0].EndTime == nil || !crs[0].EndTime.Time.Equal(end) || crs[0].InstanceMatchCriteria != "targeted" {
		t.Fatalf("class status capacityReservations %+v", crs)
	}
	e.class = class
	types, err := e.p.GetInstanceTypes(e.ctx, pool(e, class))
	if err != nil {
		t.Fatal(err)
	}
	offs := reservedOfferings(types, "p5.4xlarge")
	if len(offs) != 1 || offs[0].ReservationID != id || offs[0].ReservationType != "capacity-block" || !offs[0].Available ||
		offs[0].ReservedCapacity != 2 || offs[0].Zone != zone {
		t.Fatalf("reserved offerings of p5.4xlarge %+v", offs)
	}
	claim := e.claim(in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeReserved), in(karpv1.LabelInstanceType, "p5.4xlarge"))
	got, err := e.p.Create(e.ctx, claim)
	if err != nil {
		t.Fatalf("launching into the block: %v", err)
	}
	if got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved || got.Labels[awsv1.LabelCapacityReservationID] != id ||
		got.Labels[awsv1.LabelCapacityReservationType] != "capacity-block" {
		t.Errorf("NodeClaim labels %v", got.Labels)
	}
	inst := e.instanceOf(got.Status.ProviderID)
	if inst.CapacityReservationID != id || inst.CapacityType != awsemu.MarketCapacityBlock {
		t.Errorf("instance %s: reservation %q, capacity type %q", inst.ID, inst.CapacityReservationID, inst.CapacityType)
	}
	fleets := e.emu.FleetRequests()
	if last := fleets[len(fleets)-1]; last.CapacityType != awsemu.MarketCapacityBlock {
		t.Errorf("the fleet's target capacity type is %q, want capacity-block", last.CapacityType)
	}

	// 39 minutes before the end, on a clock of its own: expiring.
	clk := clocktesting.NewFakeClock(end.Add(-39 * time.Minute))
	r := *e.p.Resolver()
	r.Clock = clk
	found, _, err := r.CapacityReservations(e.ctx, spec.CapacityReservationSelectorTerms)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Reservation.State != nodeclass.ReservationStateExpiring {
		t.Errorf("39 minutes before its end: %+v, want expiring", found)
	}
	late := e.opts
	late.Clock = clk
	p, err := awsprovider.New(e.ctx, e.cfg, late)
	if err != nil {
		t.Fatal(err)
	}
	types, err = p.GetInstanceTypes(e.ctx, pool(e, class))
	if err != nil {
		t.Fatal(err)
	}
	if offs := reservedOfferings(types, "p5.4xlarge"); len(offs) != 1 || offs[0].Available {
		t.Errorf("the expiring block's offering %+v should be unavailable", offs)
	}
}
