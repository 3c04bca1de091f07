package awsemu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// The calls a node autoscaler makes against real EC2 that the emulator
// used to refuse or mis-answer, through aws-sdk-go-v2.
func TestControllerCallsAnsweredAsEC2(t *testing.T) {
	e := start(t, awsemu.Options{})
	ctx := context.Background()
	c := ec2.NewFromConfig(sdkConfig(e))

	t.Run("DescribeInstanceTypes supported-virtualization-type", func(t *testing.T) {
		var hvm int
		p := ec2.NewDescribeInstanceTypesPaginator(c, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
		}})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.InstanceTypes {
				if !contains(it.SupportedVirtualizationTypes, ec2types.VirtualizationTypeHvm) {
					t.Errorf("%s matched hvm with %v", it.InstanceType, it.SupportedVirtualizationTypes)
				}
				hvm++
			}
		}
		want := len(catalog.Builtin().OfferedTypes("us-east-1", ""))
		if hvm == 0 || hvm > want {
			t.Errorf("%d hvm types of %d offered", hvm, want)
		}
	})

	t.Run("DescribeSpotPriceHistory MaxResults 2000", func(t *testing.T) {
		out, err := c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(2000), ProductDescriptions: []string{"Linux/UNIX"}})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(out.SpotPriceHistory); n != 1000 || aws.ToString(out.NextToken) == "" {
			t.Errorf("%d prices (next %q); want a full page of 1000 and a token", n, aws.ToString(out.NextToken))
		}
		if _, err := c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(0)}); apiCode(t, err) != "InvalidParameterValue" {
			t.Errorf("MaxResults 0: %v", err)
		}
	})

	lt := launchTemplate(t, e, c, "run", "x86_64", "")
	subnets := discoverySubnets(t, c)

	t.Run("RunInstances DryRun", func(t *testing.T) {
		_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
			DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), InstanceType: ec2types.InstanceTypeM5Large,
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(lt)},
			SubnetId:       subnets[0].SubnetId,
		})
		if code := apiCode(t, err); code != "DryRunOperation" {
			t.Errorf("DryRun: %v, want DryRunOperation", err)
		}
		if len(e.Instances()) != 0 {
			t.Error("a DryRun launched an instance")
		}
		if err := e.DenyAction("ec2:RunInstances"); err != nil {
			t.Fatal(err)
		}
		_, err = c.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
		if code := apiCode(t, err); code != "UnauthorizedOperation" {
			t.Errorf("denied DryRun: %v, want UnauthorizedOperation", err)
		}
		e.ClearFaults()
	})

	var id string
	t.Run("RunInstances", func(t *testing.T) {
		out, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
			MinCount: aws.Int32(1), MaxCount: aws.Int32(2), InstanceType: ec2types.InstanceTypeM5Large,
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(lt)},
			SubnetId:       subnets[1].SubnetId,
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("a")}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Instances) != 2 || aws.ToString(out.ReservationId) == "" {
			t.Fatalf("launched %d instances, reservation %q", len(out.Instances), aws.ToString(out.ReservationId))
		}
		in := out.Instances[0]
		id = aws.ToString(in.InstanceId)
		if in.InstanceType != ec2types.InstanceTypeM5Large || aws.ToString(in.SubnetId) != aws.ToString(subnets[1].SubnetId) ||
			aws.ToString(in.Placement.AvailabilityZone) != aws.ToString(subnets[1].AvailabilityZone) {
			t.Errorf("instance %+v", in)
		}
		e.InjectICE("m5.large", aws.ToString(subnets[0].AvailabilityZone), "on-demand")
		_, err = c.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1), InstanceType: ec2types.InstanceTypeM5Large,
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(lt)}, SubnetId: subnets[0].SubnetId})
		if code := apiCode(t, err); code != "InsufficientInstanceCapacity" {
			t.Errorf("RunInstances under ICE: %v", err)
		}
		e.ClearFaults()
		if _, err := c.RunInstances(ctx, &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1)}); apiCode(t, err) != "MissingParameter" {
			t.Errorf("RunInstances without a type: %v", err)
		}
	})

	t.Run("DescribeInstanceStatus", func(t *testing.T) {
		out, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{id}, IncludeAllInstances: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.InstanceStatuses) != 1 || aws.ToString(out.InstanceStatuses[0].InstanceId) != id {
			t.Fatalf("statuses %+v", out.InstanceStatuses)
		}
		running, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range running.InstanceStatuses {
			if s.InstanceState.Name != ec2types.InstanceStateNameRunning || s.InstanceStatus.Status != ec2types.SummaryStatusOk {
				t.Errorf("without IncludeAllInstances: %s %s %s", aws.ToString(s.InstanceId), s.InstanceState.Name, s.InstanceStatus.Status)
			}
		}
		if _, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{"i-0000000000000000f"}}); apiCode(t, err) != "InvalidInstanceID.NotFound" {
			t.Errorf("unknown id: %v", err)
		}
	})
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// The same calls through botocore, an independent implementation of the
// wire protocol.
func TestControllerCallsThroughBoto3(t *testing.T) {
	e := start(t, awsemu.Options{})
	out := boto(t, e, `
ec2, pricing = client('ec2'), client('pricing')
out['hvm'] = len(ec2.describe_instance_types(Filters=[{'Name': 'supported-virtualization-type', 'Values': ['hvm']}], MaxResults=5)['InstanceTypes'])
out['spot'] = len(ec2.describe_spot_price_history(MaxResults=2000, ProductDescriptions=['Linux/UNIX'])['SpotPriceHistory'])
img = client('ssm').get_parameter(Name='/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id')['Parameter']['Value']
out['dryrun'] = code(ec2.run_instances, DryRun=True, ImageId=img, InstanceType='m5.large', MinCount=1, MaxCount=1)
r = ec2.run_instances(ImageId=img, InstanceType='m5.large', MinCount=1, MaxCount=1)
iid = r['Instances'][0]['InstanceId']
st = ec2.describe_instance_status(InstanceIds=[iid], IncludeAllInstances=True)['InstanceStatuses']
out['status'] = [s['InstanceId'] == iid for s in st]
out['dedicated'] = len(pricing.get_products(ServiceCode='AmazonEC2', Filters=[
    {'Type': 'TERM_MATCH', 'Field': 'productFamily', 'Value': 'Compute Instance'},
    {'Type': 'TERM_MATCH', 'Field': 'tenancy', 'Value': 'Dedicated'},
    {'Type': 'TERM_MATCH', 'Field': 'instanceType', 'Value': 'm5.large'},
    {'Type': 'TERM_MATCH', 'Field': 'regionCode', 'Value': 'us-east-1'}])['PriceList'])
`)
	want := map[string]any{"hvm": float64(5), "spot": float64(1000), "dryrun": "DryRunOperation", "status": []any{true}, "dedicated": float64(1)}
	for k, v := range want {
		if got := out[k]; fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
}
