package aws_test

import (
	"errors"
	"testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// twoSubnets adds two subnets with the given CIDRs in the zone of the
// env's first subnet, tagged for a class of their own, and returns the
// zone, the subnets' ids in id order and the spec of a class selecting just
// them.
func twoSubnets(t *testing.T, e *env, cidr1, cidr2 string) (zone, low, high string, spec awsv1.EC2NodeClassSpec) {
	t.Helper()
	zone = e.class.Status.Subnets[0].Zone
	tags := map[string]string{"dovetail.test/subnets": t.Name()}
	a, err := e.emu.AddSubnet(zone, cidr1, tags)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.emu.AddSubnet(zone, cidr2, tags)
	if err != nil {
		t.Fatal(err)
	}
	low, high = min(a, b), max(a, b)
	spec = discoverySpec()
	spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: tags}}
	return zone, low, high, spec
}

// A zone with two subnets, the lowest-id one full: the launch goes to the
// other one, at the first CreateFleet.
func TestLaunchInSubnetWithMostFreeAddresses(t *testing.T) {
	e := newEnv(t, envOptions{})
	zone, low, high, spec := twoSubnets(t, e, "10.0.192.0/28", "10.0.192.16/28")
	if err := e.emu.ReserveAddresses(low, 11); err != nil {
		t.Fatal(err)
	}
	class := e.createClass(spec)
	if n := len(class.Status.Subnets); n != 2 {
		t.Fatalf("class resolved %d subnets, want 2", n)
	}
	e.emu.ResetCalls()
	got, err := e.p.Create(e.ctx, e.claimFor(class, "default", in(karpv1.LabelTopologyZone, zone)))
	if err != nil {
		t.Fatalf("launch with a full and a free subnet in %s: %v", zone, err)
	}
	if in := e.instanceOf(got.Status.ProviderID); in.SubnetID != high {
		t.Errorf("launched in subnet %s; want %s (the full one is %s)", in.SubnetID, high, low)
	}
	if n := countCalls(e, "ec2:CreateFleet"); n != 1 {
		t.Errorf("%d CreateFleet calls; want 1 (the full subnet is known full from DescribeSubnets)", n)
	}
}

// The subnet the last description showed freest filled up since: EC2
// answers InsufficientFreeAddressesInSubnet, and the same Create launches
// in the zone's other subnet without marking the zone's offerings
// unavailable. Once every subnet of the zone is full, the offering is.
func TestSubnetFullFallsBackToNextSubnetOfZone(t *testing.T) {
	e := newEnv(t, envOptions{})
	zone, low, high, spec := twoSubnets(t, e, "10.0.192.0/28", "10.0.192.16/28")
	if err := e.emu.ReserveAddresses(high, 6); err != nil { // high: 5 free, low: 11
		t.Fatal(err)
	}
	class := e.createClass(spec)
	if err := e.emu.ReserveAddresses(low, 11); err != nil { // low fills after the description
		t.Fatal(err)
	}
	claim := func() *karpv1.NodeClaim {
		return e.claimFor(class, "default", in(karpv1.LabelTopologyZone, zone), in(karpv1.LabelInstanceType, "m5.large"), in(karpv1.CapacityTypeLabelKey, "on-demand"))
	}
	key := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: zone, CapacityType: "on-demand"}
	e.emu.ResetCalls()
	got, err := e.p.Create(e.ctx, claim())
	if err != nil {
		t.Fatalf("launch when the freest-looking subnet is full: %v", err)
	}
	if in := e.instanceOf(got.Status.ProviderID); in.SubnetID != high {
		t.Errorf("launched in subnet %s; want %s, the zone's other subnet", in.SubnetID, high)
	}
	if n := countCalls(e, "ec2:CreateFleet"); n != 2 {
		t.Errorf("%d CreateFleet calls; want 2 (the full subnet, then the next)", n)
	}
	if e.p.Unavailable().IsUnavailable(key) {
		t.Errorf("%v marked unavailable though its zone has a subnet with free addresses", key)
	}
	// The full subnet is remembered: the next launch goes straight to high.
	e.emu.ResetCalls()
	got, err = e.p.Create(e.ctx, claim())
	if err != nil {
		t.Fatal(err)
	}
	if in := e.instanceOf(got.Status.ProviderID); in.SubnetID != high {
		t.Errorf("second launch in subnet %s; want %s", in.SubnetID, high)
	}
	if n := countCalls(e, "ec2:CreateFleet"); n != 1 {
		t.Errorf("second launch: %d CreateFleet calls; want 1", n)
	}
	// Fill high: now the zone has no subnet with a free address.
	if err := e.emu.ReserveAddresses(high, 3); err != nil {
		t.Fatal(err)
	}
	_, err = e.p.Create(e.ctx, claim())
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("launch with every subnet of the zone full: %v; want an insufficient capacity error", err)
	}
	if !e.p.Unavailable().IsUnavailable(key) {
		t.Errorf("%v not marked unavailable once every subnet of %s is full", key, zone)
	}
}

func countCalls(e *env, action string) int {
	n := 0
	for _, c := range e.emu.Calls() {
		if c.Action == action {
			n++
		}
	}
	return n
}
