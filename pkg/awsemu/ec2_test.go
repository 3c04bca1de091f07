package awsemu_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

func TestDescribeInstanceTypesPaginatesTheRegionsCatalog(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()

	want := map[string]*catalog.Type{}
	for _, ty := range catalog.Builtin().OfferedTypes("us-east-1", "") {
		want[ty.Name] = ty
	}
	got := map[string]ec2types.InstanceTypeInfo{}
	pages := 0
	p := ec2.NewDescribeInstanceTypesPaginator(c, &ec2.DescribeInstanceTypesInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		if len(out.InstanceTypes) > 100 {
			t.Fatalf("page %d has %d types, AWS pages at most 100", pages+1, len(out.InstanceTypes))
		}
		pages++
		for _, it := range out.InstanceTypes {
			if _, dup := got[string(it.InstanceType)]; dup {
				t.Fatalf("%s listed twice", it.InstanceType)
			}
			got[string(it.InstanceType)] = it
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d types in %d pages, the catalog offers %d in us-east-1", len(got), pages, len(want))
	}
	if pages != (len(want)+99)/100 {
		t.Errorf("got %d pages for %d types", pages, len(want))
	}
	m5, ok := got["m5.large"]
	if !ok {
		t.Fatal("m5.large missing")
	}
	// Facts from the EC2 data set (SOURCES.md validation section).
	if aws.ToInt32(m5.VCpuInfo.DefaultVCpus) != 2 || aws.ToInt64(m5.MemoryInfo.SizeInMiB) != 8192 {
		t.Errorf("m5.large: %d vCPU %d MiB, want 2 and 8192", aws.ToInt32(m5.VCpuInfo.DefaultVCpus), aws.ToInt64(m5.MemoryInfo.SizeInMiB))
	}
	if !slices.Equal(m5.ProcessorInfo.SupportedArchitectures, []ec2types.ArchitectureType{"x86_64"}) {
		t.Errorf("m5.large architectures %v", m5.ProcessorInfo.SupportedArchitectures)
	}
	if aws.ToInt32(m5.NetworkInfo.MaximumNetworkInterfaces) != 3 || aws.ToInt32(m5.NetworkInfo.Ipv4AddressesPerInterface) != 10 {
		t.Errorf("m5.large network %d ENIs x %d IPv4", aws.ToInt32(m5.NetworkInfo.MaximumNetworkInterfaces), aws.ToInt32(m5.NetworkInfo.Ipv4AddressesPerInterface))
	}
	if g, ok := got["p5.48xlarge"]; ok {
		if g.GpuInfo == nil || len(g.GpuInfo.Gpus) != 1 || aws.ToInt32(g.GpuInfo.Gpus[0].Count) != 8 {
			t.Errorf("p5.48xlarge GPUs %+v, want 8", g.GpuInfo)
		}
	}
	if m7g, ok := got["m7g.large"]; ok && !slices.Equal(m7g.ProcessorInfo.SupportedArchitectures, []ec2types.ArchitectureType{"arm64"}) {
		t.Errorf("m7g.large architectures %v", m7g.ProcessorInfo.SupportedArchitectures)
	}
}

func TestCreateFleetDescribeTerminate(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	lt := launchTemplate(t, e, c, "smoke", "x86_64", "")

	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"local"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(subnets.Subnets) != 3 {
		t.Fatalf("%d discovery subnets, want 3", len(subnets.Subnets))
	}
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, s := range subnets.Subnets {
		for _, it := range []string{"m5.large", "c5.large", "m6i.large"} {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it), SubnetId: s.SubnetId})
		}
	}
	out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}}},
	})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Errors) != 0 || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet: %d errors, instances %+v", len(out.Errors), out.Instances)
	}
	// The cheapest on-demand candidate, computed from the catalog.
	cat := catalog.Builtin()
	names := []string{"m5.large", "c5.large", "m6i.large"}
	sort.Slice(names, func(i, j int) bool {
		pi, _ := cat.OnDemandPrice("us-east-1", names[i])
		pj, _ := cat.OnDemandPrice("us-east-1", names[j])
		if pi != pj {
			return pi < pj
		}
		return names[i] < names[j]
	})
	if got := string(out.Instances[0].InstanceType); got != names[0] {
		t.Errorf("launched %s, the cheapest is %s", got, names[0])
	}
	id := out.Instances[0].InstanceIds[0]
	desc, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	in := desc.Reservations[0].Instances[0]
	if in.Tags == nil || len(in.Tags) != 1 || aws.ToString(in.Tags[0].Key) != "karpenter.sh/nodepool" {
		t.Errorf("tags %+v", in.Tags)
	}
	eventually(t, 5e9, "instance running", func() bool {
		d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		return err == nil && d.Reservations[0].Instances[0].State.Name == ec2types.InstanceStateNameRunning
	})
	term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if term.TerminatingInstances[0].PreviousState.Name != ec2types.InstanceStateNameRunning || term.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameShuttingDown {
		t.Errorf("terminate: %+v -> %+v", term.TerminatingInstances[0].PreviousState, term.TerminatingInstances[0].CurrentState)
	}
}
