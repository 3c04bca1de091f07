package iampolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ManagedPolicyMaxChars is IAM's limit on a managed policy document,
// counted without whitespace.
const ManagedPolicyMaxChars = 6144

// MaxPolicyNameLength is IAM's limit on a policy name.
const MaxPolicyNameLength = 128

// Params are the values the policies are scoped by.
type Params struct {
	// Partition is "aws", "aws-cn" or "aws-us-gov".
	Partition string
	// Region and AccountID locate the cluster.
	Region, AccountID string
	// ClusterName is the EKS cluster name (at most 100 characters).
	ClusterName string
	// NodeRoleName is the IAM role nodes run as; the controller may pass
	// it to EC2. List more roles with extra PassRole statements if
	// EC2NodeClasses name others.
	NodeRoleName string
	// QueueName is the interruption queue (by default the cluster name).
	QueueName string
}

// TemplateParams are placeholders in ${NAME} form, for envsubst and
// Terraform templatefile: the documents in docs/iam use them.
func TemplateParams() Params {
	return Params{
		Partition:    "${AWS_PARTITION}",
		Region:       "${AWS_REGION}",
		AccountID:    "${AWS_ACCOUNT_ID}",
		ClusterName:  "${CLUSTER_NAME}",
		NodeRoleName: "${NODE_ROLE_NAME}",
		QueueName:    "${INTERRUPTION_QUEUE}",
	}
}

// Document is an IAM policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a policy document. Action and Resource are
// always lists here.
type Statement struct {
	Sid    string `json:"Sid,omitempty"`
	Effect string `json:"Effect"`
	// Principal is set in resource policies only (e.g. the queue policy).
	Principal any                       `json:"Principal,omitempty"`
	Action    []string                  `json:"Action"`
	Resource  []string                  `json:"Resource"`
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// Effects.
const (
	Allow = "Allow"
	Deny  = "Deny"
)

// Policy is a named managed policy.
type Policy struct {
	// Name is the managed policy name.
	Name string
	// Short is the part of the name that says what the policy is for
	// (NodeLifecycle, ...), used for file names.
	Short    string
	Document Document
}

// Minified returns the document as compact JSON: what IAM counts against
// ManagedPolicyMaxChars.
func (d Document) Minified() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		panic(fmt.Sprintf("iampolicy: encoding a policy document: %v", err)) // only plain values inside
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// Indented returns the document as indented JSON with a final newline.
func (d Document) Indented() []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, d.Minified(), "", "  "); err != nil {
		panic(fmt.Sprintf("iampolicy: indenting a policy document: %v", err))
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// Parse reads a policy document. It accepts Action and Resource as a string
// or a list, as IAM does.
func Parse(data []byte) (Document, error) {
	var raw struct {
		Version   string `json:"Version"`
		Statement []struct {
			Sid       string                    `json:"Sid"`
			Effect    string                    `json:"Effect"`
			Action    stringOrList              `json:"Action"`
			Resource  stringOrList              `json:"Resource"`
			Condition map[string]map[string]any `json:"Condition"`
		} `json:"Statement"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Document{}, fmt.Errorf("iampolicy: parsing a policy document: %w", err)
	}
	d := Document{Version: raw.Version}
	for i, s := range raw.Statement {
		if s.Effect != Allow && s.Effect != Deny {
			return Document{}, fmt.Errorf("iampolicy: Statement[%d].Effect: %q is not Allow or Deny", i, s.Effect)
		}
		d.Statement = append(d.Statement, Statement{Sid: s.Sid, Effect: s.Effect, Action: s.Action, Resource: s.Resource, Condition: s.Condition})
	}
	return d, nil
}

type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// Tag keys the conditions use.
const (
	tagNodePool  = "karpenter.sh/nodepool"
	tagNodeClaim = "karpenter.sh/nodeclaim"
	tagNodeClass = "karpenter.k8s.aws/ec2nodeclass"
	tagEKS       = "eks:eks-cluster-name"
	tagRegion    = "topology.kubernetes.io/region"
	tagName      = "Name"
)

// ControllerPolicies returns the controller's managed policies, in a fixed
// order: NodeLifecycle, IAMIntegration, EKSIntegration, Interruption,
// ResourceDiscovery.
func ControllerPolicies(p Params) []Policy {
	if p.QueueName == "" {
		p.QueueName = p.ClusterName
	}
	ec2 := func(resource string) string {
		return fmt.Sprintf("arn:%s:ec2:%s:*:%s", p.Partition, p.Region, resource)
	}
	ec2Public := func(resource string) string {
		return fmt.Sprintf("arn:%s:ec2:%s::%s", p.Partition, p.Region, resource)
	}
	clusterTag := "aws:ResourceTag/kubernetes.io/cluster/" + p.ClusterName
	clusterReqTag := "aws:RequestTag/kubernetes.io/cluster/" + p.ClusterName
	taggedResources := []string{
		ec2("fleet/*"), ec2("instance/*"), ec2("volume/*"), ec2("network-interface/*"),
		ec2("launch-template/*"), ec2("spot-instances-request/*"),
	}
	requestTagged := map[string]map[string]any{
		"StringEquals": {clusterReqTag: "owned", "aws:RequestTag/" + tagEKS: p.ClusterName},
		"StringLike":   {"aws:RequestTag/" + tagNodePool: "*"},
	}
	creationTagging := map[string]map[string]any{
		"StringEquals": {
			clusterReqTag: "owned", "aws:RequestTag/" + tagEKS: p.ClusterName,
			"ec2:CreateAction": []string{"RunInstances", "CreateFleet", "CreateLaunchTemplate"},
		},
		"StringLike": {"aws:RequestTag/" + tagNodePool: "*"},
	}
	ownedByCluster := map[string]map[string]any{
		"StringEquals": {clusterTag: "owned"},
		"StringLike":   {"aws:ResourceTag/" + tagNodePool: "*"},
	}
	profileARN := fmt.Sprintf("arn:%s:iam::%s:instance-profile/*", p.Partition, p.AccountID)

	nodeLifecycle := Document{Version: "2012-10-17", Statement: []Statement{
		{
			Sid: "AllowScopedEC2InstanceAccessActions", Effect: Allow,
			Action: []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource: []string{
				ec2Public("image/*"), ec2Public("snapshot/*"), ec2("security-group/*"), ec2("subnet/*"),
				ec2("capacity-reservation/*"), ec2("placement-group/*"),
			},
		},
		{
			Sid: "AllowScopedEC2LaunchTemplateAccessActions", Effect: Allow,
			Action:    []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource:  []string{ec2("launch-template/*")},
			Condition: ownedByCluster,
		},
		{
			Sid: "AllowScopedEC2InstanceActionsWithTags", Effect: Allow,
			Action:    []string{"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"},
			Resource:  taggedResources,
			Condition: requestTagged,
		},
		{
			Sid: "AllowScopedResourceCreationTagging", Effect: Allow,
			Action:    []string{"ec2:CreateTags"},
			Resource:  taggedResources,
			Condition: creationTagging,
		},
		{
			Sid: "AllowScopedResourceTagging", Effect: Allow,
			Action:   []string{"ec2:CreateTags"},
			Resource: []string{ec2("instance/*")},
			Condition: map[string]map[string]any{
				"StringEquals":              {clusterTag: "owned"},
				"StringLike":                {"aws:ResourceTag/" + tagNodePool: "*"},
				"StringEqualsIfExists":      {"aws:RequestTag/" + tagEKS: p.ClusterName},
				"ForAllValues:StringEquals": {"aws:TagKeys": []string{tagEKS, tagNodeClaim, tagName}},
			},
		},
		{
			Sid: "AllowScopedDeletion", Effect: Allow,
			Action:    []string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"},
			Resource:  []string{ec2("instance/*"), ec2("launch-template/*")},
			Condition: ownedByCluster,
		},
	}}

	profileReqTags := map[string]any{
		"aws:RequestTag/kubernetes.io/cluster/" + p.ClusterName: "owned",
		"aws:RequestTag/" + tagEKS:                              p.ClusterName,
		"aws:RequestTag/" + tagRegion:                           p.Region,
	}
	profileResTags := map[string]any{
		"aws:ResourceTag/kubernetes.io/cluster/" + p.ClusterName: "owned",
		"aws:ResourceTag/" + tagRegion:                           p.Region,
	}
	merged := map[string]any{}
	for k, v := range profileReqTags {
		merged[k] = v
	}
	for k, v := range profileResTags {
		merged[k] = v
	}
	iamIntegration := Document{Version: "2012-10-17", Statement: []Statement{
		{
			Sid: "AllowPassingInstanceRole", Effect: Allow,
			Action:   []string{"iam:PassRole"},
			Resource: []string{fmt.Sprintf("arn:%s:iam::%s:role/%s", p.Partition, p.AccountID, p.NodeRoleName)},
			Condition: map[string]map[string]any{
				"StringEquals": {"iam:PassedToService": []string{"ec2.amazonaws.com", "ec2.amazonaws.com.cn"}},
			},
		},
		{
			Sid: "AllowScopedInstanceProfileCreationActions", Effect: Allow,
			Action:   []string{"iam:CreateInstanceProfile"},
			Resource: []string{profileARN},
			Condition: map[string]map[string]any{
				"StringEquals": profileReqTags,
				"StringLike":   {"aws:RequestTag/" + tagNodeClass: "*"},
			},
		},
		{
			Sid: "AllowScopedInstanceProfileTagActions", Effect: Allow,
			Action:   []string{"iam:TagInstanceProfile"},
			Resource: []string{profileARN},
			Condition: map[string]map[string]any{
				"StringEquals": merged,
				"StringLike":   {"aws:ResourceTag/" + tagNodeClass: "*", "aws:RequestTag/" + tagNodeClass: "*"},
			},
		},
		{
			Sid: "AllowScopedInstanceProfileActions", Effect: Allow,
			Action:   []string{"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"},
			Resource: []string{profileARN},
			Condition: map[string]map[string]any{
				"StringEquals": profileResTags,
				"StringLike":   {"aws:ResourceTag/" + tagNodeClass: "*"},
			},
		},
	}}

	eksIntegration := Document{Version: "2012-10-17", Statement: []Statement{{
		Sid: "AllowAPIServerEndpointDiscovery", Effect: Allow,
		Action:   []string{"eks:DescribeCluster"},
		Resource: []string{fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", p.Partition, p.Region, p.AccountID, p.ClusterName)},
	}}}

	interruption := Document{Version: "2012-10-17", Statement: []Statement{{
		Sid: "AllowInterruptionQueueActions", Effect: Allow,
		Action:   []string{"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
		Resource: []string{fmt.Sprintf("arn:%s:sqs:%s:%s:%s", p.Partition, p.Region, p.AccountID, p.QueueName)},
	}}}

	resourceDiscovery := Document{Version: "2012-10-17", Statement: []Statement{
		{
			Sid: "AllowRegionalReadActions", Effect: Allow,
			Action: []string{
				"ec2:DescribeAvailabilityZones", "ec2:DescribeCapacityReservations", "ec2:DescribeImages",
				"ec2:DescribeInstances", "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings",
				"ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups",
				"ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets",
			},
			Resource:  []string{"*"},
			Condition: map[string]map[string]any{"StringEquals": {"aws:RequestedRegion": p.Region}},
		},
		{
			Sid: "AllowSSMReadActions", Effect: Allow,
			Action:   []string{"ssm:GetParameter"},
			Resource: []string{fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/*", p.Partition, p.Region)},
		},
		{
			Sid: "AllowPricingReadActions", Effect: Allow,
			Action:   []string{"pricing:GetProducts"},
			Resource: []string{"*"},
		},
		{
			Sid: "AllowUnscopedInstanceProfileListAction", Effect: Allow,
			Action:   []string{"iam:ListInstanceProfiles"},
			Resource: []string{"*"},
		},
		{
			Sid: "AllowInstanceProfileReadActions", Effect: Allow,
			Action:   []string{"iam:GetInstanceProfile"},
			Resource: []string{profileARN},
		},
	}}

	name := func(short string) string { return "dovetail-" + short + "-" + p.ClusterName }
	return []Policy{
		{Name: name("NodeLifecycle"), Short: "NodeLifecycle", Document: nodeLifecycle},
		{Name: name("IAMIntegration"), Short: "IAMIntegration", Document: iamIntegration},
		{Name: name("EKSIntegration"), Short: "EKSIntegration", Document: eksIntegration},
		{Name: name("Interruption"), Short: "Interruption", Document: interruption},
		{Name: name("ResourceDiscovery"), Short: "ResourceDiscovery", Document: resourceDiscovery},
	}
}

// RebootForRepairPolicy is the policy the AWS feature gate RebootForRepair
// needs on top of ControllerPolicies: ec2:RebootInstances on the
// cluster's own instances (node repair reboots a reboot-clearable fault in
// place). Attach it only with the gate on.
func RebootForRepairPolicy(p Params) Policy {
	doc := Document{Version: "2012-10-17", Statement: []Statement{{
		Sid: "AllowScopedReboot", Effect: Allow,
		Action:   []string{"ec2:RebootInstances"},
		Resource: []string{fmt.Sprintf("arn:%s:ec2:%s:*:instance/*", p.Partition, p.Region)},
		Condition: map[string]map[string]any{
			"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/" + p.ClusterName: "owned"},
			"StringLike":   {"aws:ResourceTag/" + tagNodePool: "*"},
		},
	}}}
	return Policy{Name: "dovetail-RebootForRepair-" + p.ClusterName, Short: "RebootForRepair", Document: doc}
}
