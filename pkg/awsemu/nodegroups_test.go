package awsemu_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// TestNodeGroupsThroughTheSDK: seeded node groups come back through the
// unmodified EKS and Auto Scaling clients, with CAS's tags on the ASG.
func TestNodeGroupsThroughTheSDK(t *testing.T) {
	e := start(t, awsemu.Options{ClusterName: "dev"})
	if err := e.AddNodeGroups(
		awsemu.NodeGroup{Name: "spot", InstanceTypes: []string{"m5.large", "m5a.large"}, CapacityType: "SPOT", MaxSize: 6,
			ASGTags: map[string]string{"k8s.io/cluster-autoscaler/node-template/label/team": "web"}},
		awsemu.NodeGroup{Name: "gpu", InstanceTypes: []string{"g5.xlarge"}, AMIType: "AL2023_x86_64_NVIDIA",
			Taints: []awsemu.NodeGroupTaint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"}}},
	); err != nil {
		t.Fatal(err)
	}
	if err := e.AddNodeGroups(awsemu.NodeGroup{Name: "gpu"}); err == nil {
		t.Error("a second node group named gpu was accepted")
	}
	ctx := context.Background()
	cfg := sdkConfig(e)
	ek := eks.NewFromConfig(cfg)
	list, err := ek.ListNodegroups(ctx, &eks.ListNodegroupsInput{ClusterName: aws.String("dev")})
	if err != nil || !slices.Equal(list.Nodegroups, []string{"gpu", "spot"}) {
		t.Fatalf("ListNodegroups = %v, %v", list, err)
	}
	d, err := ek.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("dev"), NodegroupName: aws.String("gpu")})
	if err != nil {
		t.Fatal(err)
	}
	ng := d.Nodegroup
	if ng.AmiType != ekstypes.AMITypesAl2023X8664Nvidia || len(ng.Taints) != 1 || ng.Taints[0].Effect != ekstypes.TaintEffectNoSchedule ||
		ng.CapacityType != ekstypes.CapacityTypesOnDemand || len(ng.Subnets) == 0 || len(ng.Resources.AutoScalingGroups) != 1 {
		t.Errorf("gpu node group = %+v", ng)
	}
	if _, err := ek.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("dev"), NodegroupName: aws.String("nope")}); apiCode(t, err) != "ResourceNotFoundException" {
		t.Errorf("missing node group: %v", err)
	}
	as := autoscaling.NewFromConfig(cfg)
	out, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"eks-spot-dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.AutoScalingGroups) != 1 {
		t.Fatalf("%d groups", len(out.AutoScalingGroups))
	}
	g := out.AutoScalingGroups[0]
	tags := map[string]string{}
	for _, tg := range g.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if aws.ToInt32(g.MaxSize) != 6 || tags["k8s.io/cluster-autoscaler/enabled"] != "true" || tags["k8s.io/cluster-autoscaler/node-template/label/team"] != "web" || len(g.AvailabilityZones) == 0 {
		t.Errorf("ASG = %+v, tags %v", g, tags)
	}
	all, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil || len(all.AutoScalingGroups) != 2 {
		t.Errorf("all groups: %v, %v", all, err)
	}
}
