package awsemu_test

import (
	"context"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

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
		TagSpecifications:           []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}}},
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

func TestDescribeInstanceTypeOfferingsByLocationType(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	cat := catalog.Builtin()
	zones := cat.Zones("us-east-1")
	perZone := 0
	for _, z := range zones {
		perZone += len(cat.OfferedTypes("us-east-1", z.Name))
	}
	m5 := 0
	for _, ty := range cat.OfferedTypes("us-east-1", zones[0].Name) {
		if strings.HasPrefix(ty.Name, "m5.") {
			m5++
		}
	}
	cases := []struct {
		name    string
		locType ec2types.LocationType
		filters []ec2types.Filter
		want    int
	}{
		{"region", ec2types.LocationTypeRegion, nil, len(cat.OfferedTypes("us-east-1", ""))},
		{"every zone by name", ec2types.LocationTypeAvailabilityZone, nil, perZone},
		{"every zone by id", ec2types.LocationTypeAvailabilityZoneId, nil, perZone},
		{"one zone", ec2types.LocationTypeAvailabilityZone, []ec2types.Filter{{Name: aws.String("location"), Values: []string{zones[0].Name}}}, len(cat.OfferedTypes("us-east-1", zones[0].Name))},
		{"one zone id", ec2types.LocationTypeAvailabilityZoneId, []ec2types.Filter{{Name: aws.String("location"), Values: []string{zones[0].ID}}}, len(cat.OfferedTypes("us-east-1", zones[0].Name))},
		{"wildcard type in one zone", ec2types.LocationTypeAvailabilityZone, []ec2types.Filter{
			{Name: aws.String("location"), Values: []string{zones[0].Name}},
			{Name: aws.String("instance-type"), Values: []string{"m5.*"}},
		}, m5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := 0
			p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: tc.locType, Filters: tc.filters})
			for p.HasMorePages() {
				out, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range out.InstanceTypeOfferings {
					if o.LocationType != tc.locType {
						t.Fatalf("offering %+v has location type %s", o, o.LocationType)
					}
				}
				got += len(out.InstanceTypeOfferings)
			}
			if got != tc.want {
				t.Errorf("%d offerings, want %d", got, tc.want)
			}
		})
	}
	_, err := c.DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{LocationType: "galaxy"})
	if code := apiCode(t, err); code != "InvalidParameterValue" {
		t.Errorf("bad location type: %q", code)
	}
	var cliOut struct {
		InstanceTypeOfferings []struct{ InstanceType, Location string }
	}
	if err := cli(t, e, &cliOut, "ec2", "describe-instance-type-offerings", "--location-type", "availability-zone-id",
		"--filters", "Name=location,Values="+zones[1].ID, "Name=instance-type,Values=m5.?arge"); err != nil {
		t.Fatal(err)
	}
	if len(cliOut.InstanceTypeOfferings) != 1 || cliOut.InstanceTypeOfferings[0].InstanceType != "m5.large" || cliOut.InstanceTypeOfferings[0].Location != zones[1].ID {
		t.Errorf("aws ec2 describe-instance-type-offerings: %+v", cliOut)
	}
}

func TestEC2ErrorCodes(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		code string
	}{
		{"unknown instance", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"malformed instance id", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"instance-1"}})
			return err
		}, "InvalidInstanceID.Malformed"},
		{"ids with MaxResults", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}, MaxResults: aws.Int32(5)})
			return err
		}, "InvalidParameterCombination"},
		{"MaxResults too small", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(0)})
			return err
		}, "InvalidParameterValue"},
		{"MaxResults too large for instance types", func() error {
			_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(101)})
			return err
		}, "InvalidParameterValue"},
		{"garbage NextToken", func() error {
			_, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{NextToken: aws.String("not-a-token")})
			return err
		}, "InvalidParameterValue"},
		{"unknown filter", func() error {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("colour"), Values: []string{"red"}}}})
			return err
		}, "InvalidParameterValue"},
		{"unknown instance type", func() error {
			_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}})
			return err
		}, "InvalidInstanceType"},
		{"unknown subnet", func() error {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
			return err
		}, "InvalidSubnetID.NotFound"},
		{"unknown security group", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
			return err
		}, "InvalidGroup.NotFound"},
		{"unknown image", func() error {
			_, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0123456789abcdef0"}})
			return err
		}, "InvalidAMIID.NotFound"},
		{"unknown launch template name", func() error {
			_, err := c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}})
			return err
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"unknown launch template id", func() error {
			_, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String("lt-0123456789abcdef0")})
			return err
		}, "InvalidLaunchTemplateId.NotFound"},
		{"delete without name or id", func() error {
			_, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{})
			return err
		}, "MissingParameter"},
		{"terminate unknown", func() error {
			_, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"reserved tag key", func() error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-0123456789abcdef0"}, Tags: []ec2types.Tag{{Key: aws.String("aws:x"), Value: aws.String("y")}}})
			return err
		}, "InvalidParameterValue"},
		{"unknown zone", func() error {
			_, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1z"}})
			return err
		}, "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := apiCode(t, tc.call()); got != tc.code {
				t.Errorf("error code %q, want %q", got, tc.code)
			}
		})
	}
	// botocore parses the same codes from the same wire answers.
	out := boto(t, e, `
ec2 = client('ec2')
out['instance'] = code(ec2.describe_instances, InstanceIds=['i-0123456789abcdef0'])
out['combination'] = code(ec2.describe_instances, InstanceIds=['i-0123456789abcdef0'], MaxResults=5)
out['maxresults'] = code(ec2.describe_instance_types, MaxResults=101)
out['token'] = code(ec2.describe_images, NextToken='garbage')
out['subnet'] = code(ec2.describe_subnets, SubnetIds=['subnet-0123456789abcdef0'])
out['lt'] = code(ec2.describe_launch_templates, LaunchTemplateNames=['nope'])
out['image'] = code(ec2.describe_images, ImageIds=['ami-0123456789abcdef0'])
out['dryrun'] = code(ec2.describe_subnets, DryRun=True)
`)
	want := map[string]string{
		"instance": "InvalidInstanceID.NotFound", "combination": "InvalidParameterCombination", "maxresults": "InvalidParameterValue",
		"token": "InvalidParameterValue", "subnet": "InvalidSubnetID.NotFound", "lt": "InvalidLaunchTemplateName.NotFoundException",
		"image": "InvalidAMIID.NotFound", "dryrun": "DryRunOperation",
	}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("boto3 %s: %v, want %s", k, out[k], v)
		}
	}
	if got := cliCode(t, e, "ec2", "describe-security-groups", "--group-ids", "sg-0123456789abcdef0"); got != "InvalidGroup.NotFound" {
		t.Errorf("aws ec2 describe-security-groups: %q", got)
	}
}

func TestDiscoveryFiltersAndWildcards(t *testing.T) {
	e := start(t, awsemu.Options{ClusterName: "team-b"})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	f := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	zones := catalog.Builtin().Zones("us-east-1")[:3]
	cases := []struct {
		name    string
		filters []ec2types.Filter
		want    int
	}{
		{"discovery tag", []ec2types.Filter{f("tag:karpenter.sh/discovery", "team-b")}, 3},
		{"other cluster", []ec2types.Filter{f("tag:karpenter.sh/discovery", "local")}, 0},
		{"cluster tag key", []ec2types.Filter{f("tag-key", "kubernetes.io/cluster/team-b")}, 3},
		{"tag key wildcard", []ec2types.Filter{f("tag-key", "kubernetes.io/cluster/*")}, 3},
		{"tag value wildcard", []ec2types.Filter{f("tag:karpenter.sh/discovery", "team-?")}, 3},
		{"escaped wildcard does not match", []ec2types.Filter{f("tag:karpenter.sh/discovery", `team\*`)}, 0},
		{"zone", []ec2types.Filter{f("availability-zone", zones[1].Name)}, 1},
		{"zone id OR", []ec2types.Filter{f("availability-zone-id", zones[0].ID, zones[2].ID)}, 2},
		{"AND of filters", []ec2types.Filter{f("tag:karpenter.sh/discovery", "team-b"), f("availability-zone", zones[0].Name)}, 1},
	}
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if err != nil || len(vpcs.Vpcs) != 1 {
		t.Fatalf("DescribeVpcs: %v %+v", err, vpcs)
	}
	vpc := aws.ToString(vpcs.Vpcs[0].VpcId)
	cases = append(cases, struct {
		name    string
		filters []ec2types.Filter
		want    int
	}{"vpc", []ec2types.Filter{f("vpc-id", vpc)}, 3})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: tc.filters})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Subnets) != tc.want {
				t.Errorf("%d subnets, want %d", len(out.Subnets), tc.want)
			}
			for _, s := range out.Subnets {
				if aws.ToString(s.VpcId) != vpc {
					t.Errorf("subnet %s in vpc %s", aws.ToString(s.SubnetId), aws.ToString(s.VpcId))
				}
			}
		})
	}
	var sgs struct{ SecurityGroups []struct{ GroupName string } }
	if err := cli(t, e, &sgs, "ec2", "describe-security-groups", "--filters", "Name=tag:karpenter.sh/discovery,Values=team-b"); err != nil {
		t.Fatal(err)
	}
	if len(sgs.SecurityGroups) != 1 || sgs.SecurityGroups[0].GroupName != "team-b-node" {
		t.Errorf("aws ec2 describe-security-groups: %+v", sgs)
	}
}

func TestImagesAndAliasParameters(t *testing.T) {
	e := start(t, awsemu.Options{KubernetesVersion: "1.36"})
	cfg := sdkConfig(e)
	c := ec2.NewFromConfig(cfg)
	s := ssm.NewFromConfig(cfg)
	ctx := context.Background()
	aliases := []struct {
		param, namePattern, arch string
	}{
		{"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id", "amazon-eks-node-al2023-x86_64-standard-1.36-*", "x86_64"},
		{"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/standard/recommended/image_id", "amazon-eks-node-al2023-arm64-standard-1.36-*", "arm64"},
		{"/aws/service/eks/optimized-ami/1.36/amazon-linux-2/recommended/image_id", "amazon-eks-node-1.36-*", "x86_64"},
		{"/aws/service/eks/optimized-ami/1.36/amazon-linux-2-arm64/recommended/image_id", "amazon-eks-arm64-node-1.36-*", "arm64"},
		{"/aws/service/bottlerocket/aws-k8s-1.36/x86_64/latest/image_id", "bottlerocket-aws-k8s-1.36-x86_64-*", "x86_64"},
		{"/aws/service/bottlerocket/aws-k8s-1.36/arm64/latest/image_id", "bottlerocket-aws-k8s-1.36-aarch64-*", "arm64"},
	}
	for _, a := range aliases {
		t.Run(a.param, func(t *testing.T) {
			p, err := s.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(a.param)})
			if err != nil {
				t.Fatal(err)
			}
			imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{a.namePattern}}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs.Images) < 2 {
				t.Fatalf("%d images match %s, want several versions", len(imgs.Images), a.namePattern)
			}
			newest := imgs.Images[0]
			for _, img := range imgs.Images {
				if string(img.Architecture) != a.arch {
					t.Errorf("%s has architecture %s", aws.ToString(img.Name), img.Architecture)
				}
				if aws.ToString(img.CreationDate) > aws.ToString(newest.CreationDate) {
					newest = img
				}
			}
			if got := aws.ToString(p.Parameter.Value); got != aws.ToString(newest.ImageId) {
				t.Errorf("alias -> %s, the newest image is %s (%s)", got, aws.ToString(newest.ImageId), aws.ToString(newest.Name))
			}
		})
	}
	// A pinned alias resolves to that version's image.
	imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amazon-eks-node-al2023-x86_64-standard-1.36-*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs.Images {
		name := aws.ToString(img.Name)
		p, err := s.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/" + name + "/image_id")})
		if err != nil {
			t.Fatalf("pinned %s: %v", name, err)
		}
		if aws.ToString(p.Parameter.Value) != aws.ToString(img.ImageId) {
			t.Errorf("pinned %s -> %s, want %s", name, aws.ToString(p.Parameter.Value), aws.ToString(img.ImageId))
		}
	}
	// The role tag selects exactly the AL2023 standard images.
	tagged, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:role"), Values: []string{"local"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range tagged.Images {
		if !strings.Contains(aws.ToString(img.Name), "al2023") || !strings.Contains(aws.ToString(img.Name), "-standard-") {
			t.Errorf("role=local tags %s", aws.ToString(img.Name))
		}
	}
	if len(tagged.Images) == 0 {
		t.Error("no image carries role=local")
	}
	// Pagination with boto3: MaxResults 5 walks every image exactly once.
	all, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	out := boto(t, e, `
ec2 = client('ec2')
ids, pages, kw = [], 0, {'MaxResults': 5}
while True:
    r = ec2.describe_images(**kw)
    pages += 1
    ids += [i['ImageId'] for i in r['Images']]
    if not r.get('NextToken'):
        break
    kw['NextToken'] = r['NextToken']
out['ids'] = ids
out['pages'] = pages
out['small'] = code(ec2.describe_images, MaxResults=0)
out['unbounded'] = len(ec2.describe_images(MaxResults=5000)['Images'])
`)
	ids, _ := out["ids"].([]any)
	if len(ids) != len(all.Images) {
		t.Errorf("boto3 paged %d images, one call returns %d", len(ids), len(all.Images))
	}
	seen := map[any]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("boto3 saw %v twice", id)
		}
		seen[id] = true
	}
	if pages, _ := out["pages"].(float64); int(pages) != (len(all.Images)+4)/5 {
		t.Errorf("boto3 needed %v pages for %d images", out["pages"], len(all.Images))
	}
	if out["small"] != "InvalidParameterValue" {
		t.Errorf("boto3 MaxResults=0: %v", out["small"])
	}
	// botocore's model does not bound DescribeImages' MaxResults: a large
	// value is a large page, not an error.
	if n, _ := out["unbounded"].(float64); int(n) != min(len(all.Images), 1000) {
		t.Errorf("boto3 MaxResults=5000 returned %v images of %d", out["unbounded"], len(all.Images))
	}
}

func TestSpotPriceHistoryFollowsTheSpotRule(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	zones := catalog.Builtin().Zones("us-east-1")
	out, err := c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{"m5.large", "m7g.xlarge"},
		ProductDescriptions: []string{"Linux/UNIX"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, z := range zones {
		for _, ty := range []string{"m5.large", "m7g.xlarge"} {
			if catalog.Builtin().Offered("us-east-1", z.Name, ty) {
				want++
			}
		}
	}
	if len(out.SpotPriceHistory) != want {
		t.Fatalf("%d prices, want one per offered (type, zone): %d", len(out.SpotPriceHistory), want)
	}
	for _, sp := range out.SpotPriceHistory {
		od, _ := catalog.Builtin().OnDemandPrice("us-east-1", string(sp.InstanceType))
		wantPrice := catalog.SpotPrice("us-east-1", aws.ToString(sp.AvailabilityZone), string(sp.InstanceType), od)
		got, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
		if err != nil || math.Abs(got-wantPrice) > 1e-6 || got >= od {
			t.Errorf("%s %s: spot %s, want %g (on-demand %g)", sp.InstanceType, aws.ToString(sp.AvailabilityZone), aws.ToString(sp.SpotPrice), wantPrice, od)
		}
		if sp.ProductDescription != "Linux/UNIX" || sp.Timestamp == nil {
			t.Errorf("product %q timestamp %v", sp.ProductDescription, sp.Timestamp)
		}
	}
	var cliOut struct {
		SpotPriceHistory []struct{ AvailabilityZone, InstanceType string }
	}
	if err := cli(t, e, &cliOut, "ec2", "describe-spot-price-history", "--instance-types", "m5.large",
		"--product-descriptions", "Linux/UNIX (Amazon VPC)", "--filters", "Name=availability-zone,Values="+zones[0].Name); err != nil {
		t.Fatal(err)
	}
	if len(cliOut.SpotPriceHistory) != 1 || cliOut.SpotPriceHistory[0].AvailabilityZone != zones[0].Name {
		t.Errorf("aws ec2 describe-spot-price-history: %+v", cliOut)
	}
}

func TestLaunchTemplates(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	for _, n := range []string{"karpenter.k8s.aws/aaa", "karpenter.k8s.aws/bbb", "other"} {
		_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(n),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: newestImage(t, c, "amazon-eks-node-al2023-x86_64-standard-*").ImageId},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
				Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("local")}}}},
		})
		if err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("other"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}})
	if code := apiCode(t, err); code != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("duplicate name: %q", code)
	}
	_, err = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("a b"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}})
	if code := apiCode(t, err); code != "InvalidParameterValue" {
		t.Errorf("bad name: %q", code)
	}
	out, err := c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("launch-template-name"), Values: []string{"karpenter.k8s.aws/*"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LaunchTemplates) != 2 {
		t.Fatalf("%d templates match the prefix, want 2", len(out.LaunchTemplates))
	}
	id := aws.ToString(out.LaunchTemplates[0].LaunchTemplateId)
	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}})
	if code := apiCode(t, err); code != "InvalidLaunchTemplateId.NotFound" {
		t.Errorf("deleted id: %q", code)
	}
	var cliOut struct {
		LaunchTemplates []struct{ LaunchTemplateName string }
	}
	if err := cli(t, e, &cliOut, "ec2", "describe-launch-templates", "--filters", "Name=tag:karpenter.k8s.aws/cluster,Values=local"); err != nil {
		t.Fatal(err)
	}
	if len(cliOut.LaunchTemplates) != 2 {
		t.Errorf("aws ec2 describe-launch-templates: %+v", cliOut)
	}
	if got := cliCode(t, e, "ec2", "delete-launch-template", "--launch-template-name", "gone"); got != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("aws ec2 delete-launch-template: %q", got)
	}
}
