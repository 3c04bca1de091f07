package migrate

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

func version(data *ec2types.ResponseLaunchTemplateData) *ec2types.LaunchTemplateVersion {
	return &ec2types.LaunchTemplateVersion{LaunchTemplateId: aws.String("lt-0123"), LaunchTemplateName: aws.String("t"), VersionNumber: aws.Int64(3), LaunchTemplateData: data}
}

func TestLaunchTemplateFamilyAndFields(t *testing.T) {
	b64 := func(s string) *string { return aws.String(base64.StdEncoding.EncodeToString([]byte(s))) }
	for _, tc := range []struct {
		name   string
		data   *ec2types.ResponseLaunchTemplateData
		img    *ec2types.Image
		family string
	}{
		{"al2023 by image name", &ec2types.ResponseLaunchTemplateData{ImageId: aws.String("ami-1")}, &ec2types.Image{Name: aws.String("amazon-eks-node-al2023-x86_64-standard-1.37-v1")}, awsv1.AMIFamilyAL2023},
		{"al2 by image name", &ec2types.ResponseLaunchTemplateData{ImageId: aws.String("ami-1")}, &ec2types.Image{Name: aws.String("amazon-eks-gpu-node-1.37-v1")}, awsv1.AMIFamilyAL2},
		{"bottlerocket by user data", &ec2types.ResponseLaunchTemplateData{ImageId: aws.String("ami-1"), UserData: b64("[settings.kubernetes]\ncluster-name = \"x\"\n")}, &ec2types.Image{Name: aws.String("my-golden-image")}, awsv1.AMIFamilyBottlerocket},
		{"nodeadm user data", &ec2types.ResponseLaunchTemplateData{ImageId: aws.String("ami-1"), UserData: b64("Content-Type: application/node.eks.aws\n\nkind: NodeConfig\n")}, nil, awsv1.AMIFamilyAL2023},
		{"bootstrap.sh user data", &ec2types.ResponseLaunchTemplateData{ImageId: aws.String("ami-1"), UserData: b64("#!/bin/bash\n/etc/eks/bootstrap.sh prod\n")}, nil, awsv1.AMIFamilyAL2},
		{"unknown", &ec2types.ResponseLaunchTemplateData{ImageId: aws.String("ami-1"), UserData: b64("#!/bin/bash\necho hi\n")}, &ec2types.Image{Name: aws.String("golden")}, ""},
	} {
		g := Group{Name: "g", InstanceTypes: []string{"m5.large"}, CapacityType: "on-demand", NodeRole: "arn:aws:iam::1:role/r"}
		g.ApplyLaunchTemplate(FromLaunchTemplateVersion(version(tc.data)), tc.img)
		if g.AMIID != "ami-1" || g.AMIFamily != tc.family || g.LaunchTemplate.Version != "3" {
			t.Errorf("%s: group %+v, want family %q", tc.name, g, tc.family)
		}
		res := Convert([]Group{g}, catalog.Builtin())
		if tc.family == "" {
			if len(res.NodeClasses) != 0 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "sets AMI ami-1, but neither its name nor the launch template's user data tells its AMI family; not converted") {
				t.Errorf("%s: %d classes, notes %q", tc.name, len(res.NodeClasses), res.Notes)
			}
			continue
		}
		if len(res.NodeClasses) != 1 || aws.ToString(res.NodeClasses[0].Spec.AMIFamily) != tc.family || res.NodeClasses[0].Spec.AMISelectorTerms[0].ID != "ami-1" {
			t.Errorf("%s: classes %+v notes %q", tc.name, res.NodeClasses, res.Notes)
		}
	}
	// The template's type, security groups (network interfaces too),
	// profile by ARN and spot market.
	lt := FromLaunchTemplateVersion(version(&ec2types.ResponseLaunchTemplateData{InstanceType: "c6i.large", SecurityGroupIds: []string{"sg-1"},
		NetworkInterfaces:     []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecification{{Groups: []string{"sg-2", "sg-1"}}},
		IamInstanceProfile:    &ec2types.LaunchTemplateIamInstanceProfileSpecification{Arn: aws.String("arn:aws:iam::1:instance-profile/path/prof")},
		InstanceMarketOptions: &ec2types.LaunchTemplateInstanceMarketOptions{MarketType: ec2types.MarketTypeSpot}}))
	g := Group{Name: "g", AMIType: "AL2023_x86_64_STANDARD", CapacityType: "on-demand", SecurityGroups: []string{"sg-cluster"}}
	g.ApplyLaunchTemplate(lt, nil)
	if !slices.Equal(g.InstanceTypes, []string{"c6i.large"}) || !slices.Equal(g.SecurityGroups, []string{"sg-1", "sg-2"}) || g.InstanceProfile != "prof" || g.CapacityType != "spot" {
		t.Errorf("group %+v", g)
	}
	res := Convert([]Group{g}, catalog.Builtin())
	if len(res.NodeClasses) != 1 || aws.ToString(res.NodeClasses[0].Spec.InstanceProfile) != "prof" || res.NodeClasses[0].Spec.Role != "" || res.NodeClasses[0].Spec.AMISelectorTerms[0].Alias != "al2023@latest" {
		t.Errorf("class %+v", res.NodeClasses)
	}
}

func TestFromASGCapacityAndOwnership(t *testing.T) {
	pct := func(v int32) *astypes.MixedInstancesPolicy {
		return &astypes.MixedInstancesPolicy{InstancesDistribution: &astypes.InstancesDistribution{OnDemandPercentageAboveBaseCapacity: aws.Int32(v)},
			LaunchTemplate: &astypes.LaunchTemplate{Overrides: []astypes.LaunchTemplateOverrides{{InstanceType: aws.String("m5.large")}, {InstanceType: aws.String("m5.large")}}}}
	}
	for _, tc := range []struct {
		mp   *astypes.MixedInstancesPolicy
		want string
	}{{nil, "on-demand"}, {pct(0), "spot"}, {pct(100), "on-demand"}, {pct(40), CapacityTypeMixed}} {
		g := FromASG(&astypes.AutoScalingGroup{AutoScalingGroupName: aws.String("a"), MaxSize: aws.Int32(3), VPCZoneIdentifier: aws.String("subnet-1, subnet-2"), MixedInstancesPolicy: tc.mp})
		if g.CapacityType != tc.want || !g.SelfManaged || !slices.Equal(g.Subnets, []string{"subnet-1", "subnet-2"}) {
			t.Errorf("%+v: group %+v, want capacity %s", tc.mp, g, tc.want)
		}
		if tc.mp != nil && !slices.Equal(g.InstanceTypes, []string{"m5.large"}) {
			t.Errorf("instance types %v", g.InstanceTypes)
		}
	}
	g := FromASG(&astypes.AutoScalingGroup{AutoScalingGroupName: aws.String("a"), MaxSize: aws.Int32(3), MixedInstancesPolicy: pct(40)})
	g.AMIType, g.NodeRole = "AL2023_x86_64_STANDARD", "arn:aws:iam::1:role/r"
	if res := Convert([]Group{g}, catalog.Builtin()); len(res.NodePools) != 1 || !slices.Equal(res.NodePools[0].Spec.Template.Spec.Requirements[1].Values, []string{"spot", "on-demand"}) {
		t.Errorf("mixed pool %+v", res.NodePools)
	}
	tag := func(k string) astypes.TagDescription {
		return astypes.TagDescription{Key: aws.String(k), Value: aws.String("owned")}
	}
	for _, tc := range []struct {
		tags []astypes.TagDescription
		want bool
	}{
		{[]astypes.TagDescription{tag("kubernetes.io/cluster/prod")}, true},
		{[]astypes.TagDescription{tag("k8s.io/cluster-autoscaler/prod")}, true},
		{[]astypes.TagDescription{tag("kubernetes.io/cluster/other")}, false},
		{[]astypes.TagDescription{tag("kubernetes.io/cluster/prod"), tag("eks:nodegroup-name")}, false},
	} {
		if got := SelfManaged(&astypes.AutoScalingGroup{Tags: tc.tags}, "prod"); got != tc.want {
			t.Errorf("SelfManaged(%v) = %v", tc.tags, got)
		}
	}
}
