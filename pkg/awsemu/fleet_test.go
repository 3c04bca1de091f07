package awsemu_test

import (
	"context"
	"encoding/base64"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// pool is one (type, zone) a fleet request offers, priced from the catalog
// independently of the emulator.
type pool struct {
	typ, zone, subnet string
	price             float64
}

func discoverySubnets(t testing.TB, c *ec2.Client) []ec2types.Subnet {
	t.Helper()
	out, err := c.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"local"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out.Subnets, func(i, j int) bool {
		return aws.ToString(out.Subnets[i].AvailabilityZone) < aws.ToString(out.Subnets[j].AvailabilityZone)
	})
	return out.Subnets
}

// pools prices every (type, subnet) pair the way the emulator documents:
// on-demand from the catalog's price table, spot from catalog.SpotPrice;
// pairs not offered are left out.
func pools(t testing.TB, subnets []ec2types.Subnet, types []string, capacityType string) []pool {
	t.Helper()
	cat := catalog.Builtin()
	var out []pool
	for _, s := range subnets {
		zone := aws.ToString(s.AvailabilityZone)
		for _, ty := range types {
			if !cat.Offered("us-east-1", zone, ty) {
				continue
			}
			od, ok := cat.OnDemandPrice("us-east-1", ty)
			if !ok {
				t.Fatalf("no price for %s", ty)
			}
			p := od
			if capacityType == "spot" {
				p = catalog.SpotPrice("us-east-1", zone, ty, od)
			}
			out = append(out, pool{typ: ty, zone: zone, subnet: aws.ToString(s.SubnetId), price: p})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.price != b.price {
			return a.price < b.price
		}
		if a.typ != b.typ {
			return a.typ < b.typ
		}
		return a.zone < b.zone
	})
	return out
}

func fleetInput(lt string, subnets []ec2types.Subnet, types []string, capacityType string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, s := range subnets {
		for _, ty := range types {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(ty), SubnetId: s.SubnetId})
		}
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
	}
	if capacityType == "spot" {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyLowestPrice}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

// launched returns the (type, zone) of the one instance a fleet launched.
func launched(t testing.TB, c *ec2.Client, out *ec2.CreateFleetOutput) (string, string) {
	t.Helper()
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("want one instance, got %+v (errors %d)", out.Instances, len(out.Errors))
	}
	d, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: out.Instances[0].InstanceIds})
	if err != nil {
		t.Fatal(err)
	}
	in := d.Reservations[0].Instances[0]
	if in.InstanceType != out.Instances[0].InstanceType {
		t.Errorf("fleet says %s, DescribeInstances %s", out.Instances[0].InstanceType, in.InstanceType)
	}
	return string(in.InstanceType), aws.ToString(in.Placement.AvailabilityZone)
}

// On the seeded capacity model, lowest-price takes the cheapest pool and
// price-capacity-optimized the pool with the most spare capacity among
// those within 10% of the cheapest; setting the capacity moves it.
func TestCreateFleetAllocationStrategies(t *testing.T) {
	types := []string{"m5.large", "c5.large", "m6i.large", "r5.large", "c6i.large", "m7i.large", "m6a.large", "c6a.large"}
	e := start(t, awsemu.Options{Seed: 3})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(t, e, c, "strategies", "x86_64", "")
	subnets := discoverySubnets(t, c)
	ps := pools(t, subnets, types, "spot")
	// What price-capacity-optimized should pick, computed here from the
	// documented rule and the emulator's per-offering scores.
	pcoPick := func() pool {
		best := ps[0]
		for _, p := range ps[1:] {
			if p.price <= ps[0].price*1.1 && e.SpareCapacity(p.typ, p.zone, "spot") > e.SpareCapacity(best.typ, best.zone, "spot") {
				best = p
			}
		}
		return best
	}
	run := func(strategy ec2types.SpotAllocationStrategy) (string, string) {
		in := fleetInput(lt, subnets, types, "spot")
		in.SpotOptions.AllocationStrategy = strategy
		out, err := c.CreateFleet(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return launched(t, c, out)
	}
	lpType, lpZone := run(ec2types.SpotAllocationStrategyLowestPrice)
	if lpType != ps[0].typ || lpZone != ps[0].zone {
		t.Errorf("lowest-price launched %s/%s, want the cheapest %s/%s", lpType, lpZone, ps[0].typ, ps[0].zone)
	}
	want := pcoPick()
	pcoType, pcoZone := run(ec2types.SpotAllocationStrategyPriceCapacityOptimized)
	if pcoType != want.typ || pcoZone != want.zone {
		t.Errorf("price-capacity-optimized launched %s/%s, want %s/%s", pcoType, pcoZone, want.typ, want.zone)
	}
	if pcoType == lpType && pcoZone == lpZone {
		t.Errorf("the seeded model makes both strategies pick %s/%s; the test needs a seed where they differ", lpType, lpZone)
	}
	// No spare capacity left on that pool, all on the cheapest: PCO follows.
	if err := e.SetCapacity(awsemu.CapacityRule{InstanceType: want.typ, Zone: want.zone, CapacityType: "spot", Spare: 0}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetCapacity(awsemu.CapacityRule{InstanceType: ps[0].typ, Zone: ps[0].zone, CapacityType: "spot", Spare: awsemu.MaxSpareCapacity}); err != nil {
		t.Fatal(err)
	}
	if ty, z := run(ec2types.SpotAllocationStrategyPriceCapacityOptimized); ty != ps[0].typ || z != ps[0].zone {
		t.Errorf("after SetCapacity, price-capacity-optimized launched %s/%s, want %s/%s", ty, z, ps[0].typ, ps[0].zone)
	}
	// The emulator records what it was asked.
	reqs := e.FleetRequests()
	if len(reqs) != 3 || reqs[0].Applied != "lowest-price" || reqs[1].AllocationStrategy != "price-capacity-optimized" || len(reqs[1].Overrides) != len(ps) {
		t.Errorf("recorded fleet requests %+v", reqs)
	}
	if err := e.SetCapacity(awsemu.CapacityRule{Spare: 101}); err == nil {
		t.Error("a spare capacity of 101 was accepted")
	}
}

func TestCreateFleetChoosesTheCheapestAvailablePool(t *testing.T) {
	types := []string{"m5.large", "c5.large", "m6i.large", "r5.large", "c6i.large", "m7i.large"}
	cases := []struct {
		name         string
		capacityType string
		// ice picks which pools to make unavailable, given the sorted pools.
		ice func(ps []pool) []awsemu.ICERule
		// wantErrors is how many overrides the answer lists as failed.
		wantErrors func(ps []pool) int
		// want is the index (in sorted pools) of the pool that launches; -1 none.
		want func(ps []pool) int
	}{
		{
			name: "on-demand cheapest", capacityType: "on-demand",
			ice: nil, wantErrors: func([]pool) int { return 0 }, want: func([]pool) int { return 0 },
		},
		{
			name: "spot cheapest across zones", capacityType: "spot",
			ice: nil, wantErrors: func([]pool) int { return 0 }, want: func([]pool) int { return 0 },
		},
		{
			name: "ICE on the cheapest pool falls back to the next", capacityType: "spot",
			ice: func(ps []pool) []awsemu.ICERule {
				return []awsemu.ICERule{{InstanceType: ps[0].typ, Zone: ps[0].zone, CapacityType: "spot"}}
			},
			wantErrors: func([]pool) int { return 1 }, want: func([]pool) int { return 1 },
		},
		{
			name: "ICE on a type in every zone", capacityType: "on-demand",
			ice:        func(ps []pool) []awsemu.ICERule { return []awsemu.ICERule{{InstanceType: ps[0].typ}} },
			wantErrors: func(ps []pool) int { return countType(ps, ps[0].typ) },
			want: func(ps []pool) int {
				for i, p := range ps {
					if p.typ != ps[0].typ {
						return i
					}
				}
				return -1
			},
		},
		{
			name: "ICE on the other capacity type changes nothing", capacityType: "on-demand",
			ice:        func([]pool) []awsemu.ICERule { return []awsemu.ICERule{{CapacityType: "spot"}} },
			wantErrors: func([]pool) int { return 0 }, want: func([]pool) int { return 0 },
		},
		{
			name: "ICE everywhere launches nothing", capacityType: "spot",
			ice:        func([]pool) []awsemu.ICERule { return []awsemu.ICERule{{}} },
			wantErrors: func(ps []pool) int { return len(ps) }, want: func([]pool) int { return -1 },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, awsemu.Options{})
			c := ec2.NewFromConfig(sdkConfig(e))
			lt := launchTemplate(t, e, c, "rules", "x86_64", "")
			subnets := discoverySubnets(t, c)
			ps := pools(t, subnets, types, tc.capacityType)
			if len(ps) != len(subnets)*len(types) {
				t.Fatalf("test assumes every type is offered in every zone; %d pools", len(ps))
			}
			if tc.ice != nil {
				for _, r := range tc.ice(ps) {
					e.InjectICE(r.InstanceType, r.Zone, r.CapacityType)
				}
			}
			out, err := c.CreateFleet(context.Background(), fleetInput(lt, subnets, types, tc.capacityType))
			if err != nil {
				t.Fatalf("CreateFleet: %v", err)
			}
			if got, want := len(out.Errors), tc.wantErrors(ps); got != want {
				t.Errorf("%d errors, want %d", got, want)
			}
			for _, fe := range out.Errors {
				if aws.ToString(fe.ErrorCode) != "InsufficientInstanceCapacity" {
					t.Errorf("error code %s, want InsufficientInstanceCapacity", aws.ToString(fe.ErrorCode))
				}
				o := fe.LaunchTemplateAndOverrides
				if o == nil || o.Overrides == nil || o.Overrides.InstanceType == "" || aws.ToString(o.Overrides.SubnetId) == "" {
					t.Errorf("error without its override: %+v", o)
				}
				if string(fe.Lifecycle) != tc.capacityType {
					t.Errorf("error lifecycle %s", fe.Lifecycle)
				}
			}
			want := tc.want(ps)
			if want < 0 {
				if len(out.Instances) != 0 {
					t.Fatalf("launched %+v, want nothing", out.Instances)
				}
				if n := len(e.Instances()); n != 0 {
					t.Fatalf("%d instances exist", n)
				}
				return
			}
			typ, zone := launched(t, c, out)
			if typ != ps[want].typ || zone != ps[want].zone {
				t.Errorf("launched %s in %s, want %s in %s ($%g)", typ, zone, ps[want].typ, ps[want].zone, ps[want].price)
			}
			if lc := string(out.Instances[0].Lifecycle); lc != tc.capacityType {
				t.Errorf("lifecycle %s", lc)
			}
			inst := e.Instances()[0]
			if math.Abs(inst.Price-ps[want].price) > 1e-9 {
				t.Errorf("instance price %g, want %g", inst.Price, ps[want].price)
			}
		})
	}
}

func countType(ps []pool, typ string) int {
	n := 0
	for _, p := range ps {
		if p.typ == typ {
			n++
		}
	}
	return n
}

func TestCreateFleetReportsUnlaunchableOverrides(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	subnets := discoverySubnets(t, c)
	cat := catalog.Builtin()

	// A type the catalog does not offer in one of the subnets' zones.
	var missingType, missingSubnet string
	for _, ty := range cat.OfferedTypes("us-east-1", "") {
		if ty.Arch != "amd64" || !ty.OnDemandSupported {
			continue
		}
		for _, s := range subnets {
			if !cat.Offered("us-east-1", aws.ToString(s.AvailabilityZone), ty.Name) {
				missingType, missingSubnet = ty.Name, aws.ToString(s.SubnetId)
			}
		}
		if missingType != "" {
			break
		}
	}
	if missingType == "" {
		t.Fatal("every type is offered in every seeded zone; the test needs one that is not")
	}
	lt := launchTemplate(t, e, c, "x86", "x86_64", "")
	cases := []struct {
		name      string
		overrides []ec2types.FleetLaunchTemplateOverridesRequest
		wantCodes []string
		wantType  string
	}{
		{
			name: "type not offered in the zone",
			overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: ec2types.InstanceType(missingType), SubnetId: aws.String(missingSubnet)},
			},
			wantCodes: []string{"Unsupported"},
		},
		{
			name: "arm64 type with an x86_64 image, next to a good one",
			overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: "m7g.large", SubnetId: subnets[0].SubnetId},
				{InstanceType: "m5.large", SubnetId: subnets[0].SubnetId},
			},
			wantCodes: []string{"InvalidParameterValue"},
			wantType:  "m5.large",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := fleetInput(lt, nil, nil, "on-demand")
			in.LaunchTemplateConfigs[0].Overrides = tc.overrides
			out, err := c.CreateFleet(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, fe := range out.Errors {
				codes = append(codes, aws.ToString(fe.ErrorCode))
			}
			if len(codes) != len(tc.wantCodes) || (len(codes) > 0 && codes[0] != tc.wantCodes[0]) {
				t.Errorf("error codes %v, want %v", codes, tc.wantCodes)
			}
			if tc.wantType == "" {
				if len(out.Instances) != 0 {
					t.Errorf("launched %+v", out.Instances)
				}
				return
			}
			if typ, _ := launched(t, c, out); typ != tc.wantType {
				t.Errorf("launched %s, want %s", typ, tc.wantType)
			}
		})
	}
}

func TestCreateFleetRejectsMalformedRequests(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	subnets := discoverySubnets(t, c)
	lt := launchTemplate(t, e, c, "good", "x86_64", "")
	cases := []struct {
		name   string
		mutate func(*ec2.CreateFleetInput)
		code   string
	}{
		{"maintain fleets", func(in *ec2.CreateFleetInput) { in.Type = ec2types.FleetTypeMaintain }, "InvalidParameterValue"},
		{"unknown launch template", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("nope")
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"unknown subnet", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides[0].SubnetId = aws.String("subnet-0123456789abcdef0")
		}, "InvalidSubnetID.NotFound"},
		{"zero capacity", func(in *ec2.CreateFleetInput) { in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(0) }, "InvalidParameterValue"},
		{"bad allocation strategy", func(in *ec2.CreateFleetInput) {
			in.OnDemandOptions.AllocationStrategy = "cheapest-please"
		}, "InvalidParameterValue"},
		{"dry run", func(in *ec2.CreateFleetInput) { in.DryRun = aws.Bool(true) }, "DryRunOperation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := fleetInput(lt, subnets[:1], []string{"m5.large"}, "on-demand")
			tc.mutate(in)
			_, err := c.CreateFleet(ctx, in)
			if got := apiCode(t, err); got != tc.code {
				t.Errorf("error code %q, want %q (%v)", got, tc.code, err)
			}
		})
	}
	if n := len(e.Instances()); n != 0 {
		t.Errorf("malformed requests launched %d instances", n)
	}
	// The AWS CLI parses the same error.
	if got := cliCode(t, e, "ec2", "create-fleet", "--type", "instant",
		"--launch-template-configs", `[{"LaunchTemplateSpecification":{"LaunchTemplateName":"nope","Version":"$Latest"}}]`,
		"--target-capacity-specification", "TotalTargetCapacity=1,DefaultTargetCapacityType=on-demand"); got != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("aws ec2 create-fleet: error code %q", got)
	}
}

func TestCreateFleetRecordsTheLaunchTemplateOnTheInstance(t *testing.T) {
	e := start(t, awsemu.Options{})
	cfg := sdkConfig(e)
	c := ec2.NewFromConfig(cfg)
	ic := iam.NewFromConfig(cfg)
	ctx := context.Background()
	subnets := discoverySubnets(t, c)
	sgs, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"local"}}},
	})
	if err != nil || len(sgs.SecurityGroups) != 1 {
		t.Fatalf("security groups: %v %+v", err, sgs)
	}
	sg := aws.ToString(sgs.SecurityGroups[0].GroupId)
	prof, err := ic.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("local_123")})
	if err != nil {
		t.Fatal(err)
	}
	img := newestImage(t, c, "amazon-eks-node-al2023-arm64-standard-*")
	userData := "#!/bin/bash\necho hello\n"
	_, err = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/123"),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("local")}}}},
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            img.ImageId,
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
			SecurityGroupIds:   []string{sg},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("local_123")},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpEndpoint: "enabled", HttpTokens: "required", HttpPutResponseHopLimit: aws.Int32(1), HttpProtocolIpv6: "disabled",
			},
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{
				DeviceName: aws.String("/dev/xvda"),
				Ebs:        &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(80), VolumeType: "gp3", Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)},
			}},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: aws.String("from-template"), Value: aws.String("yes")}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := fleetInput("karpenter.k8s.aws/123", subnets[:1], []string{"m7g.large"}, "spot")
	in.TagSpecifications = []ec2types.TagSpecification{
		{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")}}},
		{ResourceType: ec2types.ResourceTypeFleet, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}},
	}
	out, err := c.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	typ, _ := launched(t, c, out)
	if typ != "m7g.large" {
		t.Fatalf("launched %s", typ)
	}
	inst := e.Instances()[0]
	if inst.UserData != userData {
		t.Errorf("user data %q, want %q", inst.UserData, userData)
	}
	if inst.CapacityType != "spot" || inst.SpotRequestID == "" {
		t.Errorf("capacity %q spot request %q", inst.CapacityType, inst.SpotRequestID)
	}
	if len(inst.SecurityGroupIDs) != 1 || inst.SecurityGroupIDs[0] != sg {
		t.Errorf("security groups %v, want [%s]", inst.SecurityGroupIDs, sg)
	}
	if inst.InstanceProfileARN != aws.ToString(prof.InstanceProfile.Arn) {
		t.Errorf("instance profile %q, want %q", inst.InstanceProfileARN, aws.ToString(prof.InstanceProfile.Arn))
	}
	if inst.MetadataOptions.HTTPPutResponseHopLimit != 1 || inst.MetadataOptions.HTTPTokens != "required" {
		t.Errorf("metadata options %+v", inst.MetadataOptions)
	}
	if len(inst.BlockDevices) != 1 || inst.BlockDevices[0].VolumeSizeGiB != 80 || inst.BlockDevices[0].Encrypted == nil || !*inst.BlockDevices[0].Encrypted {
		t.Errorf("block devices %+v", inst.BlockDevices)
	}
	if inst.ImageID != aws.ToString(img.ImageId) || inst.Architecture != "arm64" {
		t.Errorf("image %s arch %s", inst.ImageID, inst.Architecture)
	}
	wantTags := map[string]string{"from-template": "yes", "karpenter.sh/nodeclaim": "default-abcde"}
	if len(inst.Tags) != len(wantTags) {
		t.Errorf("tags %v, want %v", inst.Tags, wantTags)
	}
	for k, v := range wantTags {
		if inst.Tags[k] != v {
			t.Errorf("tag %s=%q, want %q", k, inst.Tags[k], v)
		}
	}
	// The same facts through DescribeInstances.
	d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}})
	if err != nil {
		t.Fatal(err)
	}
	di := d.Reservations[0].Instances[0]
	if di.IamInstanceProfile == nil || aws.ToString(di.IamInstanceProfile.Arn) != inst.InstanceProfileARN {
		t.Errorf("DescribeInstances profile %+v", di.IamInstanceProfile)
	}
	if di.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot || len(di.SecurityGroups) != 1 || di.MetadataOptions.HttpTokens != "required" {
		t.Errorf("DescribeInstances lifecycle %q groups %+v metadata %+v", di.InstanceLifecycle, di.SecurityGroups, di.MetadataOptions)
	}
	if aws.ToString(di.PrivateDnsName) != inst.PrivateDNSName || aws.ToString(di.PrivateIpAddress) != inst.PrivateIP {
		t.Errorf("DescribeInstances address %s %s", aws.ToString(di.PrivateDnsName), aws.ToString(di.PrivateIpAddress))
	}
}

// A fleet for more instances than its cheapest offering has fills the rest
// from the next offering and reports the one that ran out; with no other
// offering it launches what there was and reports the shortfall's cause
// (partial fulfilment). A repeat with the same client token gets the same
// instances and launches nothing.
func TestCreateFleetPartialFulfilment(t *testing.T) {
	e := start(t, awsemu.Options{Seed: 3})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(t, e, c, "partial", "x86_64", "")
	subnets := discoverySubnets(t, c)[:1]
	zone := aws.ToString(subnets[0].AvailabilityZone)
	types := []string{"m5.large", "m5.xlarge"}
	ps := pools(t, subnets, types, "on-demand")
	if len(ps) != 2 {
		t.Fatalf("pools %+v", ps)
	}
	cheap, next := ps[0].typ, ps[1].typ
	e.LimitCapacity(cheap, zone, "on-demand", 2)

	in := fleetInput(lt, subnets, types, "on-demand")
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(5)
	in.ClientToken = aws.String("partial-1")
	out, err := c.CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]int{}
	var ids []string
	for _, fi := range out.Instances {
		byType[string(fi.InstanceType)] += len(fi.InstanceIds)
		ids = append(ids, fi.InstanceIds...)
	}
	if byType[cheap] != 2 || byType[next] != 3 {
		t.Errorf("launched %v, want 2 %s (its limit) and 3 %s", byType, cheap, next)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" ||
		string(out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType) != cheap {
		t.Errorf("errors %+v, want one InsufficientInstanceCapacity for %s", out.Errors, cheap)
	}
	again, err := c.CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var againIDs []string
	for _, fi := range again.Instances {
		againIDs = append(againIDs, fi.InstanceIds...)
	}
	if !slices.Equal(ids, againIDs) || aws.ToString(again.FleetId) != aws.ToString(out.FleetId) {
		t.Errorf("the repeat with the same token got %v (fleet %s), want %v (fleet %s)", againIDs, aws.ToString(again.FleetId), ids, aws.ToString(out.FleetId))
	}
	if n := len(e.Instances()); n != 5 {
		t.Errorf("%d instances after the repeat, want 5", n)
	}

	// Only the limited offering: what is left of it, and its error.
	e.ClearFaults()
	e.LimitCapacity(cheap, zone, "on-demand", 3)
	only := fleetInput(lt, subnets, []string{cheap}, "on-demand")
	only.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(5)
	out, err = c.CreateFleet(context.Background(), only)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 3 {
		t.Errorf("launched %+v, want 3 %s", out.Instances, cheap)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" ||
		aws.ToString(out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != zone {
		t.Errorf("errors %+v, want InsufficientInstanceCapacity for %s in %s", out.Errors, cheap, zone)
	}
	// Used up: the offering is refused before launching. (A new token: the
	// SDK filled one into the input above.)
	only.ClientToken = aws.String("partial-3")
	out, err = c.CreateFleet(context.Background(), only)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 0 || len(out.Errors) != 1 {
		t.Errorf("after its limit: instances %+v errors %+v, want none and one error", out.Instances, out.Errors)
	}
}
