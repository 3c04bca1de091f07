package awsemu_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// TestLaunchTemplatesAndSelfManagedGroupsThroughTheSDK: a managed node group
// and a self-managed Auto Scaling group that use launch templates come back
// through the unmodified EC2, EKS and Auto Scaling clients with the
// template's AMI, instance type, security groups and instance profile.
func TestLaunchTemplatesAndSelfManagedGroupsThroughTheSDK(t *testing.T) {
	e := start(t, awsemu.Options{ClusterName: "dev"})
	ctx := context.Background()
	cfg := sdkConfig(e)
	c := ec2.NewFromConfig(cfg)
	sgs, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil || len(sgs.SecurityGroups) == 0 {
		t.Fatalf("DescribeSecurityGroups: %v", err)
	}
	sg := aws.ToString(sgs.SecurityGroups[0].GroupId)
	ami := e.SSMParameters()["/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"]
	lt, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("custom-ami"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(ami), InstanceType: "c5.2xlarge",
			SecurityGroupIds:   []string{sg},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Arn: aws.String("arn:aws:iam::111122223333:instance-profile/nodes")}}})
	if err != nil {
		t.Fatal(err)
	}
	ltID := aws.ToString(lt.LaunchTemplate.LaunchTemplateId)

	// DescribeLaunchTemplateVersions: by name and by id, $Default/$Latest/1.
	for _, in := range []*ec2.DescribeLaunchTemplateVersionsInput{
		{LaunchTemplateName: aws.String("custom-ami"), Versions: []string{"$Default"}},
		{LaunchTemplateId: aws.String(ltID), Versions: []string{"1"}},
		{LaunchTemplateId: aws.String(ltID)},
	} {
		out, err := c.DescribeLaunchTemplateVersions(ctx, in)
		if err != nil || len(out.LaunchTemplateVersions) != 1 {
			t.Fatalf("DescribeLaunchTemplateVersions(%+v) = %+v, %v", in, out, err)
		}
		v := out.LaunchTemplateVersions[0]
		d := v.LaunchTemplateData
		if aws.ToString(v.LaunchTemplateId) != ltID || aws.ToInt64(v.VersionNumber) != 1 || !aws.ToBool(v.DefaultVersion) ||
			aws.ToString(d.ImageId) != ami || d.InstanceType != "c5.2xlarge" || !slices.Equal(d.SecurityGroupIds, []string{sg}) ||
			d.IamInstanceProfile == nil || aws.ToString(d.IamInstanceProfile.Arn) != "arn:aws:iam::111122223333:instance-profile/nodes" {
			t.Errorf("version %+v data %+v", v, d)
		}
	}
	if _, err := c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(ltID), Versions: []string{"7"}}); apiCode(t, err) != "InvalidLaunchTemplateId.VersionNotFound" {
		t.Errorf("version 7: %v", err)
	}
	if _, err := c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("nope")}); apiCode(t, err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("unknown template: %v", err)
	}

	// A managed node group with the template reports it.
	if err := e.AddNodeGroups(awsemu.NodeGroup{Name: "lt", AMIType: "CUSTOM", LaunchTemplate: "custom-ami"}); err != nil {
		t.Fatal(err)
	}
	if err := e.AddNodeGroups(awsemu.NodeGroup{Name: "bad", LaunchTemplate: "missing"}); err == nil {
		t.Error("a node group with an unknown launch template was accepted")
	}
	d, err := eks.NewFromConfig(cfg).DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("dev"), NodegroupName: aws.String("lt")})
	if err != nil {
		t.Fatal(err)
	}
	if l := d.Nodegroup.LaunchTemplate; l == nil || aws.ToString(l.Id) != ltID || aws.ToString(l.Name) != "custom-ami" || aws.ToString(l.Version) != "1" || len(d.Nodegroup.InstanceTypes) != 0 || d.Nodegroup.AmiType != ekstypes.AMITypesCustom {
		t.Errorf("node group %+v launch template %+v", d.Nodegroup, d.Nodegroup.LaunchTemplate)
	}

	// Self-managed groups: one on the template alone, one mixed and spot.
	zero := int32(0)
	if err := e.AddSelfManagedGroups(
		awsemu.SelfManagedGroup{Name: "sm-plain", LaunchTemplate: "custom-ami", MaxSize: 3},
		awsemu.SelfManagedGroup{Name: "sm-spot", LaunchTemplate: "custom-ami", InstanceTypes: []string{"c5.xlarge", "c5a.xlarge"}, OnDemandPercentage: &zero,
			Tags: map[string]string{"k8s.io/cluster-autoscaler/node-template/label/pool": "batch"}},
	); err != nil {
		t.Fatal(err)
	}
	if err := e.AddSelfManagedGroups(awsemu.SelfManagedGroup{Name: "sm-x", LaunchTemplate: "missing"}); err == nil {
		t.Error("a self-managed group with an unknown launch template was accepted")
	}
	as, err := autoscaling.NewFromConfig(cfg).DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"sm-plain", "sm-spot"}})
	if err != nil || len(as.AutoScalingGroups) != 2 {
		t.Fatalf("DescribeAutoScalingGroups = %+v, %v", as, err)
	}
	plain, spot := as.AutoScalingGroups[0], as.AutoScalingGroups[1]
	if l := plain.LaunchTemplate; l == nil || aws.ToString(l.LaunchTemplateId) != ltID || aws.ToString(l.Version) != "$Default" || plain.MixedInstancesPolicy != nil || aws.ToInt32(plain.MaxSize) != 3 {
		t.Errorf("sm-plain %+v", plain)
	}
	mp := spot.MixedInstancesPolicy
	if mp == nil || mp.LaunchTemplate == nil || aws.ToString(mp.LaunchTemplate.LaunchTemplateSpecification.LaunchTemplateName) != "custom-ami" ||
		len(mp.LaunchTemplate.Overrides) != 2 || aws.ToString(mp.LaunchTemplate.Overrides[1].InstanceType) != "c5a.xlarge" ||
		mp.InstancesDistribution == nil || aws.ToInt32(mp.InstancesDistribution.OnDemandPercentageAboveBaseCapacity) != 0 {
		t.Errorf("sm-spot mixed policy %+v", mp)
	}
	tags := map[string]string{}
	for _, tg := range spot.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags["kubernetes.io/cluster/dev"] != "owned" || tags["k8s.io/cluster-autoscaler/enabled"] != "true" || tags["k8s.io/cluster-autoscaler/node-template/label/pool"] != "batch" || tags["eks:nodegroup-name"] != "" {
		t.Errorf("sm-spot tags %v", tags)
	}
	all, err := autoscaling.NewFromConfig(cfg).DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil || len(all.AutoScalingGroups) != 3 {
		t.Errorf("all groups: %d, %v; want the managed group's and the two self-managed", len(all.AutoScalingGroups), err)
	}
}

// TestEventRulesThroughTheSDK: the interruption rules docs/aws.md creates
// come back through the unmodified EventBridge client.
func TestEventRulesThroughTheSDK(t *testing.T) {
	e := start(t, awsemu.Options{ClusterName: "dev"})
	ctx := context.Background()
	eb := eventbridge.NewFromConfig(sdkConfig(e))
	pattern := `{"source":["aws.ec2"],"detail-type":["EC2 Spot Instance Interruption Warning"]}`
	put, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("dev-spot"), EventPattern: aws.String(pattern)})
	if err != nil || aws.ToString(put.RuleArn) != "arn:aws:events:us-east-1:111122223333:rule/dev-spot" {
		t.Fatalf("PutRule = %+v, %v", put, err)
	}
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("other"), ScheduleExpression: aws.String("rate(5 minutes)"), State: ebtypes.RuleStateDisabled}); err != nil {
		t.Fatal(err)
	}
	queueARN := "arn:aws:sqs:us-east-1:111122223333:dev"
	pt, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("dev-spot"), Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(queueARN)}}})
	if err != nil || pt.FailedEntryCount != 0 {
		t.Fatalf("PutTargets = %+v, %v", pt, err)
	}
	rules, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{NamePrefix: aws.String("dev-")})
	if err != nil || len(rules.Rules) != 1 {
		t.Fatalf("ListRules = %+v, %v", rules, err)
	}
	r := rules.Rules[0]
	if aws.ToString(r.Name) != "dev-spot" || aws.ToString(r.EventPattern) != pattern || r.State != ebtypes.RuleStateEnabled || aws.ToString(r.EventBusName) != "default" {
		t.Errorf("rule %+v", r)
	}
	page, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{Limit: aws.Int32(1)})
	if err != nil || len(page.Rules) != 1 || page.NextToken == nil {
		t.Fatalf("first page %+v, %v", page, err)
	}
	page2, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{Limit: aws.Int32(1), NextToken: page.NextToken})
	if err != nil || len(page2.Rules) != 1 || page2.NextToken != nil || aws.ToString(page2.Rules[0].Name) == aws.ToString(page.Rules[0].Name) {
		t.Errorf("second page %+v, %v", page2, err)
	}
	targets, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("dev-spot")})
	if err != nil || len(targets.Targets) != 1 || aws.ToString(targets.Targets[0].Arn) != queueARN || aws.ToString(targets.Targets[0].Id) != "q" {
		t.Errorf("ListTargetsByRule = %+v, %v", targets, err)
	}
	if _, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("nope")}); apiCode(t, err) != "ResourceNotFoundException" {
		t.Errorf("unknown rule: %v", err)
	}
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("bad"), EventPattern: aws.String("{not json")}); apiCode(t, err) != "InvalidEventPatternException" {
		t.Errorf("bad pattern: %v", err)
	}
	if _, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String("custom")}); apiCode(t, err) != "ResourceNotFoundException" {
		t.Errorf("another bus: %v", err)
	}
	if got := e.EventRules(); len(got) != 2 || len(got[0].Targets) != 1 {
		t.Errorf("EventRules() = %+v", got)
	}
}

// TestAccessEntriesThroughTheSDK: access entries created, listed and
// described through the unmodified EKS client, the principal ARN (with its
// slashes) URL-encoded in the path.
func TestAccessEntriesThroughTheSDK(t *testing.T) {
	e := start(t, awsemu.Options{ClusterName: "dev"})
	ctx := context.Background()
	ek := eks.NewFromConfig(sdkConfig(e))
	role := "arn:aws:iam::111122223333:role/path/KarpenterNodeRole-dev"
	c, err := ek.CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("dev"), PrincipalArn: aws.String(role), Type: aws.String("EC2_LINUX")})
	if err != nil || aws.ToString(c.AccessEntry.Username) != "system:node:{{EC2PrivateDNSName}}" {
		t.Fatalf("CreateAccessEntry = %+v, %v", c, err)
	}
	if _, err := ek.CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("dev"), PrincipalArn: aws.String("arn:aws:iam::111122223333:user/admin")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ek.CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("dev"), PrincipalArn: aws.String(role)}); apiCode(t, err) != "ResourceInUseException" {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := ek.CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("dev"), PrincipalArn: aws.String("not-an-arn")}); apiCode(t, err) != "InvalidParameterException" {
		t.Errorf("bad principal: %v", err)
	}
	list, err := ek.ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String("dev")})
	if err != nil || !slices.Equal(list.AccessEntries, []string{role, "arn:aws:iam::111122223333:user/admin"}) {
		t.Fatalf("ListAccessEntries = %+v, %v", list, err)
	}
	page, err := ek.ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String("dev"), MaxResults: aws.Int32(1)})
	if err != nil || len(page.AccessEntries) != 1 || page.NextToken == nil {
		t.Errorf("first page %+v, %v", page, err)
	}
	d, err := ek.DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: aws.String("dev"), PrincipalArn: aws.String(role)})
	if err != nil || aws.ToString(d.AccessEntry.Type) != "EC2_LINUX" || aws.ToString(d.AccessEntry.PrincipalArn) != role || d.AccessEntry.CreatedAt == nil {
		t.Errorf("DescribeAccessEntry = %+v, %v", d, err)
	}
	if _, err := ek.DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: aws.String("dev"), PrincipalArn: aws.String("arn:aws:iam::111122223333:role/other")}); apiCode(t, err) != "ResourceNotFoundException" {
		t.Errorf("unknown entry: %v", err)
	}
	if _, err := ek.ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String("prod")}); apiCode(t, err) != "ResourceNotFoundException" {
		t.Errorf("unknown cluster: %v", err)
	}
}
