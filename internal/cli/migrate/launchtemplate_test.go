package migrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/migrate"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/iampolicy"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestMigrateLaunchTemplatesSelfManagedAndChecks: a managed node group
// whose launch template sets a custom AMI and the instance type, and a
// self-managed spot Auto Scaling group on a Bottlerocket template with an
// instance profile, become NodePools and EC2NodeClasses that keep the AMI,
// the types, the security groups and the profile; simulate plans onto the
// same kinds of nodes. The checklist reads the EventBridge rules (a
// missing kind is named, then OK once routed) and the EKS access entries
// (the managed group's role has one, the profile's role does not).
func TestMigrateLaunchTemplatesSelfManagedAndChecks(t *testing.T) {
	ctx := context.Background()
	e, err := awsemu.Start(ctx, awsemu.Options{ClusterName: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	awsCfg := aws.Config{Region: e.Options().Region, BaseEndpoint: aws.String(e.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""), HTTPClient: awsemu.HTTPClient()}
	c := ec2.NewFromConfig(awsCfg)
	sgs, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil || len(sgs.SecurityGroups) < 2 {
		t.Fatalf("security groups: %v", err)
	}
	ltSG := aws.ToString(sgs.SecurityGroups[0].GroupId)
	var brAMI string
	for k, v := range e.SSMParameters() {
		if strings.HasPrefix(k, "/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/") && strings.HasSuffix(k, "image_id") {
			brAMI = v
		}
	}
	armAMI := e.SSMParameters()["/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/recommended/image_id"]
	if brAMI == "" || armAMI == "" {
		t.Fatalf("AMIs: bottlerocket %q al2023 arm64 %q", brAMI, armAMI)
	}
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("custom-arm"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(armAMI), InstanceType: "m7g.large", SecurityGroupIds: []string{ltSG}}}); err != nil {
		t.Fatal(err)
	}
	ic := iam.NewFromConfig(awsCfg)
	if _, err := ic.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("batch-nodes")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("batch-nodes"), RoleName: aws.String("KarpenterNodeRole-prod")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("batch-br"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(brAMI), SecurityGroupIds: []string{ltSG},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("batch-nodes")}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.AddNodeGroups(awsemu.NodeGroup{Name: "custom", AMIType: "CUSTOM", LaunchTemplate: "custom-arm", MaxSize: 5, DesiredSize: 1,
		Labels: map[string]string{"team": "arm"}}); err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	if err := e.AddSelfManagedGroups(awsemu.SelfManagedGroup{Name: "batch-spot", LaunchTemplate: "batch-br", InstanceTypes: []string{"c5.xlarge", "c5a.xlarge"},
		OnDemandPercentage: &zero, MaxSize: 8, DesiredSize: 3, Tags: map[string]string{
			"k8s.io/cluster-autoscaler/node-template/label/pool":  "batch",
			"k8s.io/cluster-autoscaler/node-template/taint/batch": "true:NoSchedule",
		}}); err != nil {
		t.Fatal(err)
	}
	// Three of the four rules target the queue; the scheduled-change rule
	// targets something else.
	queueARN := fmt.Sprintf("arn:aws:sqs:%s:%s:prod", e.Options().Region, e.Options().AccountID)
	eb := eventbridge.NewFromConfig(awsCfg)
	for _, r := range iampolicy.EventRules() {
		pat, _ := json.Marshal(r.Pattern)
		name := r.RuleName("prod")
		if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventPattern: aws.String(string(pat))}); err != nil {
			t.Fatal(err)
		}
		target := queueARN
		if r.Name == "ScheduledChange" {
			target = "arn:aws:sns:us-east-1:111122223333:elsewhere"
		}
		if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), Targets: []ebtypes.Target{{Id: aws.String("t"), Arn: aws.String(target)}}}); err != nil {
			t.Fatal(err)
		}
	}
	managedRole := fmt.Sprintf("arn:aws:iam::%s:role/eks-node-prod", e.Options().AccountID)
	profileRole := fmt.Sprintf("arn:aws:iam::%s:role/KarpenterNodeRole-prod", e.Options().AccountID)
	if _, err := eks.NewFromConfig(awsCfg).CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(managedRole), Type: aws.String("EC2_LINUX")}); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := migrate.NewCmd(func(ctx context.Context, o *migrate.Options) error {
			o.AWS = &awsCfg
			return migrate.Run(ctx, o)
		})
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(append([]string{"--cluster-name", "prod", "--kubeconfig", cp.KubeconfigPath(), "--dry-run"}, args...))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("migrate %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	manifests, report := run()
	t.Logf("$ dovetail migrate --cluster-name prod --dry-run\n%s\n(stderr)\n%s", manifests, report)
	for _, want := range []string{
		"custom           launch template custom-arm version 1, on-demand " + armAMI + " (AL2023) [m7g.large]",
		"batch-spot       self-managed launch template batch-br version 1, spot " + brAMI + " (Bottlerocket) [c5.xlarge c5a.xlarge]",
		"[TODO] route EC2 spot interruption, rebalance, instance state and scheduled change events to prod (EventBridge rules)",
		"no enabled rule targeting " + queueARN + " matches: scheduled change;",
		"spot interruption (dovetail-prod-SpotInterruption)",
		"[OK] the node role " + managedRole + " may join the cluster\n      EKS access entry of type EC2_LINUX",
		"[TODO] scale self-managed Auto Scaling group batch-spot to zero (desired 3 now)",
		"aws autoscaling update-auto-scaling-group --auto-scaling-group-name batch-spot --min-size 0 --desired-capacity 0",
		"[TODO] give the node role " + profileRole + " access to the cluster\n      no EKS access entry; no kube-system/aws-auth ConfigMap; aws eks create-access-entry --cluster-name prod --type EC2_LINUX --principal-arn " + profileRole,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q", want)
		}
	}

	m := &simulate.Manifests{}
	if err := m.Read("migrated.yaml", []byte(manifests)); err != nil {
		t.Fatalf("simulate cannot read the migrated manifests: %v", err)
	}
	classes := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range m.NodeClasses {
		classes[nc.Name] = nc
	}
	custom, batch := classes["custom"], classes["batch-spot"]
	if custom == nil || batch == nil {
		t.Fatalf("node classes %v", classes)
	}
	if len(custom.Spec.AMISelectorTerms) != 1 || custom.Spec.AMISelectorTerms[0].ID != armAMI || aws.ToString(custom.Spec.AMIFamily) != awsv1.AMIFamilyAL2023 ||
		custom.Spec.Role != "eks-node-prod" || len(custom.Spec.SecurityGroupSelectorTerms) != 1 || custom.Spec.SecurityGroupSelectorTerms[0].ID != ltSG {
		t.Errorf("custom class %+v", custom.Spec)
	}
	if len(batch.Spec.AMISelectorTerms) != 1 || batch.Spec.AMISelectorTerms[0].ID != brAMI || aws.ToString(batch.Spec.AMIFamily) != awsv1.AMIFamilyBottlerocket ||
		aws.ToString(batch.Spec.InstanceProfile) != "batch-nodes" || batch.Spec.Role != "" || batch.Spec.SecurityGroupSelectorTerms[0].ID != ltSG {
		t.Errorf("batch-spot class %+v", batch.Spec)
	}
	work := `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: arm-app, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: arm}}
  template:
    metadata: {labels: {app: arm}}
    spec:
      nodeSelector: {team: arm}
      containers: [{name: c, image: app, resources: {requests: {cpu: "1"}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch-app, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      nodeSelector: {pool: batch}
      tolerations: [{key: batch, operator: Exists, effect: NoSchedule}]
      containers: [{name: c, image: app, resources: {requests: {cpu: "1"}}}]
`
	if err := m.Read("work.yaml", []byte(work)); err != nil {
		t.Fatal(err)
	}
	res, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unschedulable) != 0 {
		t.Fatalf("unschedulable: %+v", res.Unschedulable)
	}
	want := map[string]struct {
		types []string
		ct    string
		arch  string
	}{"custom": {[]string{"m7g.large"}, "on-demand", "arm64"}, "batch-spot": {[]string{"c5.xlarge", "c5a.xlarge"}, "spot", "amd64"}}
	cat := catalog.Builtin()
	seen := map[string]int{}
	for _, nc := range res.NodeClaims {
		w, ok := want[nc.NodePool]
		typ, _ := cat.Type(nc.InstanceType)
		if !ok || !slices.Contains(w.types, nc.InstanceType) || nc.CapacityType != w.ct || typ == nil || typ.Arch != w.arch {
			t.Errorf("NodeClaim %s: pool %s %s %s; want %+v", nc.Name, nc.NodePool, nc.InstanceType, nc.CapacityType, w)
		}
		seen[nc.NodePool]++
	}
	if seen["custom"] == 0 || seen["batch-spot"] == 0 {
		t.Errorf("nodes per pool %v", seen)
	}
	for _, np := range m.NodePools {
		if np.Name == "batch-spot" && (len(np.Spec.Template.Spec.Taints) != 1 || np.Spec.Template.Spec.Taints[0] != (corev1.Taint{Key: "batch", Value: "true", Effect: corev1.TaintEffectNoSchedule})) {
			t.Errorf("batch-spot taints %v", np.Spec.Template.Spec.Taints)
		}
	}

	// When EventBridge and the access entries cannot be read, both items
	// say so instead of guessing.
	for _, a := range []string{"events:ListRules", "eks:ListAccessEntries"} {
		if err := e.DenyAction(a); err != nil {
			t.Fatal(err)
		}
	}
	_, report = run()
	for _, want := range []string{
		"[NOT CHECKED] route EC2 spot interruption, rebalance, instance state and scheduled change events to prod (EventBridge rules)\n      EventBridge ListRules: ",
		"[NOT CHECKED] give the node role " + managedRole + " access to the cluster\n      EKS ListAccessEntries: ",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("with the reads denied, the report lacks %q:\n%s", want, report)
		}
	}
	e.ClearFaults()

	// Route the last kind to the queue: the rules item turns OK.
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("dovetail-prod-ScheduledChange"), Targets: []ebtypes.Target{{Id: aws.String("t"), Arn: aws.String(queueARN)}}}); err != nil {
		t.Fatal(err)
	}
	_, report = run()
	if !strings.Contains(report, "[OK] EventBridge rules route every interruption kind to prod") {
		t.Errorf("after routing scheduled changes:\n%s", report)
	}
}
