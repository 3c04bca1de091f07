package awsemu_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// TestDefaultZonesKeepTheirSubnets: Zones 0 (and 3) seed the three /18
// subnets the emulator always had, in the region's first three zones.
func TestDefaultZonesKeepTheirSubnets(t *testing.T) {
	var ids [][]string
	for _, n := range []int{0, 3} {
		e := start(t, awsemu.Options{Zones: n})
		if got := e.Options().Zones; got != 3 {
			t.Errorf("Zones %d: Options().Zones = %d, want 3", n, got)
		}
		subnets := discoverySubnets(t, ec2.NewFromConfig(sdkConfig(e)))
		var got, gotIDs []string
		for _, s := range subnets {
			got = append(got, aws.ToString(s.AvailabilityZone)+"="+aws.ToString(s.CidrBlock))
			gotIDs = append(gotIDs, aws.ToString(s.SubnetId))
			if free := aws.ToInt32(s.AvailableIpAddressCount); free != 1<<14-5 {
				t.Errorf("Zones %d: subnet %s has %d free addresses, want %d", n, aws.ToString(s.CidrBlock), free, 1<<14-5)
			}
		}
		want := []string{"us-east-1a=10.0.0.0/18", "us-east-1b=10.0.64.0/18", "us-east-1c=10.0.128.0/18"}
		if !slices.Equal(got, want) {
			t.Errorf("Zones %d: subnets %v, want %v", n, got, want)
		}
		ids = append(ids, gotIDs)
	}
	if len(ids) == 2 && !slices.Equal(ids[0], ids[1]) {
		t.Errorf("Zones 0 and Zones 3 seed different subnets (%v, %v): the default must not change", ids[0], ids[1])
	}

	// A region with fewer than 3 zones gets all of them by default.
	e := start(t, awsemu.Options{Region: "us-west-1"})
	if got := len(discoverySubnets(t, ec2.NewFromConfig(sdkConfig(e)))); got != 2 || e.Options().Zones != 2 {
		t.Errorf("us-west-1: %d subnets, Options().Zones %d; want its 2 zones", got, e.Options().Zones)
	}
}

// TestZonesOption: Zones 4 and 6 seed that many subnets, one per zone (the
// region's first zones by name), with /19 CIDRs inside the VPC that do not
// overlap; an instance launched in each gets an address of its subnet.
func TestZonesOption(t *testing.T) {
	cat := catalog.Builtin()
	for _, n := range []int{4, 6} {
		t.Run(fmt.Sprintf("zones=%d", n), func(t *testing.T) {
			e := start(t, awsemu.Options{Zones: n})
			if got := e.Options().Zones; got != n {
				t.Errorf("Options().Zones = %d, want %d", got, n)
			}
			c := ec2.NewFromConfig(sdkConfig(e))
			subnets := discoverySubnets(t, c)
			if len(subnets) != n {
				t.Fatalf("%d subnets, want %d", len(subnets), n)
			}
			vpc := netip.MustParsePrefix("10.0.0.0/16")
			var prefixes []netip.Prefix
			for i, s := range subnets {
				zone := aws.ToString(s.AvailabilityZone)
				if want := cat.Zones("us-east-1")[i].Name; zone != want {
					t.Errorf("subnet %d is in %s, want %s (the region's first %d zones, one subnet each)", i, zone, want, n)
				}
				p, err := netip.ParsePrefix(aws.ToString(s.CidrBlock))
				if err != nil {
					t.Fatalf("subnet %s: CIDR %q: %v", aws.ToString(s.SubnetId), aws.ToString(s.CidrBlock), err)
				}
				if p.Bits() != 19 || p.Masked() != p || !vpc.Contains(p.Addr()) {
					t.Errorf("subnet in %s has CIDR %s, want a /19 network inside %s", zone, p, vpc)
				}
				for _, q := range prefixes {
					if p.Overlaps(q) {
						t.Errorf("subnet CIDRs %s and %s overlap", p, q)
					}
				}
				prefixes = append(prefixes, p)
				if free := aws.ToInt32(s.AvailableIpAddressCount); free != 1<<13-5 {
					t.Errorf("subnet %s has %d free addresses, want %d", p, free, 1<<13-5)
				}
			}

			lt := launchTemplate(t, e, c, "zones", "x86_64", "")
			for i, s := range subnets {
				zone := aws.ToString(s.AvailabilityZone)
				var it string
				for _, cand := range []string{"m5.large", "c5.large", "m4.large", "c4.large"} { // us-east-1e offers only older types
					if cat.Offered("us-east-1", zone, cand) {
						it = cand
						break
					}
				}
				if it == "" {
					t.Fatalf("none of the test's instance types is offered in %s", zone)
				}
				out, err := c.RunInstances(context.Background(), &ec2.RunInstancesInput{
					MinCount: aws.Int32(2), MaxCount: aws.Int32(2), InstanceType: ec2types.InstanceType(it),
					LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(lt)},
					SubnetId:       s.SubnetId,
				})
				if err != nil {
					t.Fatalf("RunInstances %s in %s: %v", it, zone, err)
				}
				for _, in := range out.Instances {
					ip, err := netip.ParseAddr(aws.ToString(in.PrivateIpAddress))
					if err != nil {
						t.Fatalf("instance in %s: private address %q: %v", zone, aws.ToString(in.PrivateIpAddress), err)
					}
					if !prefixes[i].Contains(ip) {
						t.Errorf("instance in %s has address %s, outside its subnet %s", zone, ip, prefixes[i])
					}
					if got := aws.ToString(in.Placement.AvailabilityZone); got != zone {
						t.Errorf("instance launched in subnet of %s placed in %s", zone, got)
					}
				}
			}
			after := discoverySubnets(t, c)
			for i, s := range after {
				if free := aws.ToInt32(s.AvailableIpAddressCount); free != 1<<13-5-2 {
					t.Errorf("subnet %s has %d free addresses after 2 launches, want %d", prefixes[i], free, 1<<13-5-2)
				}
			}
		})
	}
}

// TestZonesOutOfRange: fewer than 1 zone, or more than the region has, is
// an error naming the option and the allowed range.
func TestZonesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		region string
		zones  int
		want   string
	}{
		{"", 7, "Zones must be 1 to 6"},
		{"", -1, "Zones must be 1 to 6"},
		{"us-west-1", 3, "Zones must be 1 to 2"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		e, err := awsemu.Start(ctx, awsemu.Options{Region: tc.region, Zones: tc.zones})
		if err == nil {
			_ = e.Close()
			t.Errorf("region %q Zones %d: started, want an error", tc.region, tc.zones)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("region %q Zones %d: %v, want it to say %q", tc.region, tc.zones, err, tc.want)
		}
		cancel()
	}
}
