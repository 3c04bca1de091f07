package awsemu_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// ExampleStart launches the cheapest of two instance types through the
// unmodified SDK, the way the AWS provider does.
func ExampleStart() {
	ctx := context.Background()
	e, err := awsemu.Start(ctx, awsemu.Options{ClusterName: "demo", Seed: 1})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	cfg := e.AWSConfig() // region, endpoint, dummy credentials
	c := ec2.NewFromConfig(cfg)

	// The AL2023 alias resolves through SSM to a seeded image.
	p, _ := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{
		Name: aws.String("/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"),
	})
	_, _ = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("demo"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: p.Parameter.Value},
	})
	subnets, _ := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"demo"}},
	}})
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, typ := range []ec2types.InstanceType{"m5.large", "c5.large"} {
		overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: typ, SubnetId: subnets.Subnets[0].SubnetId})
	}
	out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("demo"), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
	})
	if err != nil {
		panic(err)
	}
	in := e.Instances()[0]
	fmt.Println(len(subnets.Subnets), "subnets;", out.Instances[0].InstanceType, in.CapacityType, "at", in.Price, "USD/h")
	// Output: 3 subnets; c5.large on-demand at 0.085 USD/h
}
