package iampolicy

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in docs/iam")

func concrete() Params {
	return Params{Partition: "aws", Region: "us-east-1", AccountID: "111122223333", ClusterName: "prod", NodeRoleName: "KarpenterNodeRole-prod"}
}

// TestPolicySizes checks IAM's limits in the worst case we support: a
// 100-character cluster name, a 64-character role, the longest partition
// and a long region.
func TestPolicySizes(t *testing.T) {
	p := Params{
		Partition: "aws-us-gov", Region: "ap-southeast-7", AccountID: "123456789012",
		ClusterName:  strings.Repeat("c", 100),
		NodeRoleName: strings.Repeat("r", 64),
	}
	for _, pol := range ControllerPolicies(p) {
		t.Run(pol.Short, func(t *testing.T) {
			n := len(pol.Document.Minified())
			t.Logf("%s: %d characters", pol.Short, n)
			if n > ManagedPolicyMaxChars {
				t.Errorf("%s is %d characters; IAM allows %d", pol.Name, n, ManagedPolicyMaxChars)
			}
			if len(pol.Name) > MaxPolicyNameLength {
				t.Errorf("name %q is %d characters; IAM allows %d", pol.Name, len(pol.Name), MaxPolicyNameLength)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name, pattern, value string
		want                 bool
	}{
		{"exact", "ec2:CreateFleet", "ec2:CreateFleet", true},
		{"star suffix", "ec2:Describe*", "ec2:DescribeImages", true},
		{"star empty", "ec2:Describe*", "ec2:Describe", true},
		{"star crosses slashes", "arn:aws:ec2:*:*:instance/*", "arn:aws:ec2:us-east-1:1:instance/i-1", true},
		{"question mark", "i-?", "i-1", true},
		{"question mark needs one", "i-?", "i-", false},
		{"case sensitive", "ec2:createfleet", "ec2:CreateFleet", false},
		{"mismatch", "arn:aws:sqs:*:*:q", "arn:aws:sqs:r:a:other", false},
		{"multiple stars", "a*b*c", "axxbyyc", true},
		{"backtrack", "a*bc", "abcbc", true},
		{"trailing literal", "a*b", "abc", false},
		{"only star", "*", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Match(tc.pattern, tc.value); got != tc.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.value, got, tc.want)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	p := concrete()
	var docs []Document
	for _, pol := range ControllerPolicies(p) {
		docs = append(docs, pol.Document)
	}
	tests := []struct {
		name, action, resource string
		want                   bool
		wantSid                string
	}{
		{"terminate an instance here", "ec2:TerminateInstances", "arn:aws:ec2:us-east-1:111122223333:instance/i-1", true, "AllowScopedDeletion"},
		{"terminate in another region", "ec2:TerminateInstances", "arn:aws:ec2:eu-west-1:111122223333:instance/i-1", false, ""},
		{"action case folded", "EC2:terminateinstances", "arn:aws:ec2:us-east-1:111122223333:instance/i-1", true, "AllowScopedDeletion"},
		{"pass the node role", "iam:PassRole", "arn:aws:iam::111122223333:role/KarpenterNodeRole-prod", true, "AllowPassingInstanceRole"},
		{"pass another role", "iam:PassRole", "arn:aws:iam::111122223333:role/Admin", false, ""},
		{"describe cluster", "eks:DescribeCluster", "arn:aws:eks:us-east-1:111122223333:cluster/prod", true, "AllowAPIServerEndpointDiscovery"},
		{"describe another cluster", "eks:DescribeCluster", "arn:aws:eks:us-east-1:111122223333:cluster/other", false, ""},
		{"send to the queue", "sqs:SendMessage", "arn:aws:sqs:us-east-1:111122223333:prod", false, ""},
		{"receive from the queue", "sqs:ReceiveMessage", "arn:aws:sqs:us-east-1:111122223333:prod", true, "AllowInterruptionQueueActions"},
		{"public SSM parameter", "ssm:GetParameter", "arn:aws:ssm:us-east-1::parameter/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/image_id", true, "AllowSSMReadActions"},
		{"private SSM parameter", "ssm:GetParameter", "arn:aws:ssm:us-east-1:111122223333:parameter/secret", false, ""},
		{"run instances", "ec2:RunInstances", "arn:aws:ec2:us-east-1::image/ami-1", true, "AllowScopedEC2InstanceAccessActions"},
		{"delete a VPC", "ec2:DeleteVpc", "arn:aws:ec2:us-east-1:111122223333:vpc/vpc-1", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Allows(docs, tc.action, tc.resource)
			if d.Allowed != tc.want || d.Statement != tc.wantSid {
				t.Errorf("Allows(%s, %s) = %+v, want allowed=%v by %q", tc.action, tc.resource, d, tc.want, tc.wantSid)
			}
		})
	}
	// An explicit Deny wins over an Allow.
	deny := Document{Statement: []Statement{{Sid: "NoTerminate", Effect: Deny, Action: []string{"ec2:Terminate*"}, Resource: []string{"*"}}}}
	if d := Allows(append(docs, deny), "ec2:TerminateInstances", "arn:aws:ec2:us-east-1:111122223333:instance/i-1"); d.Allowed || d.Statement != "NoTerminate" {
		t.Errorf("Deny did not win: %+v", d)
	}
	// Conditions are reported as assumed.
	if d := Allows(docs, "ec2:TerminateInstances", "arn:aws:ec2:us-east-1:111122223333:instance/i-1"); len(d.AssumedConditions) == 0 {
		t.Errorf("AssumedConditions empty for a conditional statement: %+v", d)
	}
}

// TestRequestResourcesAllowed checks every action dovetail uses against
// the policies, with the resources it touches.
func TestRequestResourcesAllowed(t *testing.T) {
	p := concrete()
	var docs []Document
	for _, pol := range ControllerPolicies(p) {
		docs = append(docs, pol.Document)
	}
	for _, action := range []string{
		"ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:DeleteLaunchTemplate", "ec2:TerminateInstances",
		"ec2:CreateTags", "ec2:DescribeImages", "iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile",
		"iam:GetInstanceProfile", "iam:PassRole", "ssm:GetParameter", "eks:DescribeCluster", "sqs:DeleteMessage",
		"pricing:GetProducts",
	} {
		res, ok := RequestResources(p, action)
		if !ok {
			t.Errorf("RequestResources(%s) unknown", action)
			continue
		}
		for _, r := range res {
			if d := Allows(docs, action, r); !d.Allowed {
				t.Errorf("%s on %s is not allowed", action, r)
			}
		}
	}
	if _, ok := RequestResources(p, "ec2:DeleteVpc"); ok {
		t.Error("RequestResources knows ec2:DeleteVpc; dovetail never calls it")
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, pol := range ControllerPolicies(concrete()) {
		d, err := Parse(pol.Document.Indented())
		if err != nil {
			t.Fatalf("%s: %v", pol.Short, err)
		}
		if !bytes.Equal(d.Minified(), pol.Document.Minified()) {
			t.Errorf("%s: Parse(Indented()) differs", pol.Short)
		}
	}
	d, err := Parse([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`))
	if err != nil || len(d.Statement) != 1 || d.Statement[0].Action[0] != "s3:GetObject" {
		t.Errorf("Parse of string Action/Resource = %+v, %v", d, err)
	}
	if _, err := Parse([]byte(`{"Statement":[{"Effect":"Maybe","Action":"x","Resource":"*"}]}`)); err == nil || !strings.Contains(err.Error(), "Statement[0].Effect") {
		t.Errorf("Parse(bad effect) error = %v, want one naming Statement[0].Effect", err)
	}
}

// TestGoldenFiles keeps docs/iam in step with the code. Run with -update
// to rewrite the files, then review the diff.
func TestGoldenFiles(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "docs", "iam")
	files := map[string][]byte{}
	for _, pol := range ControllerPolicies(TemplateParams()) {
		files["controller-"+pol.Short+".json"] = pol.Document.Indented()
	}
	files["gate-RebootForRepair.json"] = RebootForRepairPolicy(TemplateParams()).Document.Indented()
	files["interruption-queue-policy.json"] = QueuePolicy(TemplateParams()).Indented()
	rules, err := json.MarshalIndent(EventRules(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files["event-rules.json"] = append(rules, '\n')
	for name, want := range files {
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run go test ./pkg/providers/aws/iampolicy -update)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date (run go test ./pkg/providers/aws/iampolicy -update)", path)
		}
	}
}
