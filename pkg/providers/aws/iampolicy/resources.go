package iampolicy

import "fmt"

// RequestResources returns representative resource ARNs that a request
// dovetail makes with the given action touches, in the account and region
// of p (ids are placeholders of the right shape). IAM authorizes a request
// only when every one of its resources is allowed, so checking these
// against the policies checks the provider's calls. ok is false for an
// action dovetail does not use: a new call must be added here, and so to
// the policies, before tests pass.
func RequestResources(p Params, action string) (resources []string, ok bool) {
	if p.QueueName == "" {
		p.QueueName = p.ClusterName
	}
	ec2 := func(r string) string {
		return fmt.Sprintf("arn:%s:ec2:%s:%s:%s", p.Partition, p.Region, p.AccountID, r)
	}
	ec2Public := func(r string) string { return fmt.Sprintf("arn:%s:ec2:%s::%s", p.Partition, p.Region, r) }
	profile := fmt.Sprintf("arn:%s:iam::%s:instance-profile/dovetail/%s/example", p.Partition, p.AccountID, p.ClusterName)
	switch action {
	case "ec2:DescribeAvailabilityZones", "ec2:DescribeImages", "ec2:DescribeInstances",
		"ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates",
		"ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets",
		"ec2:DescribeCapacityReservations", "ec2:DescribeInstanceStatus", "ec2:DescribePlacementGroups",
		"pricing:GetProducts", "iam:ListInstanceProfiles":
		return []string{"*"}, true
	case "ec2:CreateFleet":
		return []string{
			ec2("fleet/fleet-00000000-0000-4000-8000-000000000000"), ec2("instance/*"), ec2("volume/*"),
			ec2("network-interface/*"), ec2("launch-template/lt-0123456789abcdef0"),
			ec2("subnet/subnet-0123456789abcdef0"), ec2("security-group/sg-0123456789abcdef0"),
			ec2Public("image/ami-0123456789abcdef0"), ec2("spot-instances-request/*"),
		}, true
	case "ec2:RunInstances":
		// Only as a dry run, validating an EC2NodeClass (no template).
		return []string{
			ec2("instance/*"), ec2("volume/*"), ec2("network-interface/*"),
			ec2("subnet/subnet-0123456789abcdef0"), ec2("security-group/sg-0123456789abcdef0"),
			ec2Public("image/ami-0123456789abcdef0"),
		}, true
	case "ec2:CreateLaunchTemplate":
		return []string{ec2("launch-template/*")}, true
	case "ec2:DeleteLaunchTemplate":
		return []string{ec2("launch-template/lt-0123456789abcdef0")}, true
	case "ec2:TerminateInstances":
		return []string{ec2("instance/i-0123456789abcdef0")}, true
	case "ec2:CreateTags", "ec2:RebootInstances":
		return []string{ec2("instance/i-0123456789abcdef0")}, true
	case "iam:GetInstanceProfile", "iam:CreateInstanceProfile", "iam:TagInstanceProfile",
		"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile":
		return []string{profile}, true
	case "iam:PassRole":
		return []string{fmt.Sprintf("arn:%s:iam::%s:role/%s", p.Partition, p.AccountID, p.NodeRoleName)}, true
	case "ssm:GetParameter":
		return []string{fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id", p.Partition, p.Region)}, true
	case "eks:DescribeCluster":
		return []string{fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", p.Partition, p.Region, p.AccountID, p.ClusterName)}, true
	case "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueUrl":
		return []string{fmt.Sprintf("arn:%s:sqs:%s:%s:%s", p.Partition, p.Region, p.AccountID, p.QueueName)}, true
	}
	return nil, false
}
