package apitest

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

var defaultNodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}

// TestDefaults creates minimal objects through the Go types and reads back
// what the apiserver defaulted.
func TestDefaults(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)

	t.Run("NodePool", func(t *testing.T) {
		np := &karpv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
			Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: defaultNodeClassRef,
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
			}}},
		}
		create(t, c, np)
		got := &karpv1.NodePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			t.Fatal(err)
		}
		if d, ok := got.Spec.Template.Spec.ExpireAfter.Duration(); !ok || d != 720*time.Hour {
			t.Errorf("expireAfter = %q, want 720h", got.Spec.Template.Spec.ExpireAfter)
		}
		if got.Spec.Disruption.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
			t.Errorf("consolidationPolicy = %q", got.Spec.Disruption.ConsolidationPolicy)
		}
		if d, ok := got.Spec.Disruption.ConsolidateAfter.Duration(); !ok || d != 0 {
			t.Errorf("consolidateAfter = %q, want 0s", got.Spec.Disruption.ConsolidateAfter)
		}
		if b := got.Spec.Disruption.Budgets; len(b) != 1 || b[0].Nodes != "10%" || b[0].Schedule != nil || b[0].Duration != nil || len(b[0].Reasons) != 0 {
			t.Errorf("budgets = %+v, want [{nodes: 10%%}]", b)
		}
		if got.Spec.Weight != nil {
			t.Errorf("weight defaulted to %d, want unset", *got.Spec.Weight)
		}
	})

	t.Run("NodePool without disruption in the manifest", func(t *testing.T) {
		u := fromYAML(t, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: defaults-yaml}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`)
		create(t, c, u)
		got := &karpv1.NodePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Disruption.ConsolidateAfter.String() != "0s" || got.Spec.Disruption.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized || len(got.Spec.Disruption.Budgets) != 1 {
			t.Errorf("disruption = %+v", got.Spec.Disruption)
		}
	})

	t.Run("NodeClaim", func(t *testing.T) {
		nc := &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
			Spec:       karpv1.NodeClaimSpec{NodeClassRef: defaultNodeClassRef, Requirements: []karpv1.NodeSelectorRequirementWithMinValues{}},
		}
		create(t, c, nc)
		got := &karpv1.NodeClaim{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			t.Fatal(err)
		}
		if d, ok := got.Spec.ExpireAfter.Duration(); !ok || d != 720*time.Hour {
			t.Errorf("expireAfter = %q, want 720h", got.Spec.ExpireAfter)
		}
	})

	t.Run("EC2NodeClass", func(t *testing.T) {
		ec2 := &awsv1.EC2NodeClass{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
			Spec: awsv1.EC2NodeClassSpec{
				Role:                       "node-role",
				AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
				SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc"}},
				SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0abc"}},
			},
		}
		create(t, c, ec2)
		got := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec2), got); err != nil {
			t.Fatal(err)
		}
		want := &awsv1.MetadataOptions{
			HTTPEndpoint:            ptr.To("enabled"),
			HTTPProtocolIPv6:        ptr.To("disabled"),
			HTTPPutResponseHopLimit: ptr.To[int64](1),
			HTTPTokens:              ptr.To("required"),
		}
		if m := got.Spec.MetadataOptions; m == nil || *m.HTTPEndpoint != *want.HTTPEndpoint || *m.HTTPProtocolIPv6 != *want.HTTPProtocolIPv6 ||
			*m.HTTPPutResponseHopLimit != *want.HTTPPutResponseHopLimit || *m.HTTPTokens != *want.HTTPTokens {
			t.Errorf("metadataOptions = %+v, want enabled/disabled/1/required", m)
		}
		if got.AMIFamily() != awsv1.AMIFamilyAL2023 {
			t.Errorf("AMIFamily() = %q", got.AMIFamily())
		}
	})

	t.Run("EC2NodeClass partial metadataOptions", func(t *testing.T) {
		ec2 := &awsv1.EC2NodeClass{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults-partial"},
			Spec: awsv1.EC2NodeClassSpec{
				Role:                       "node-role",
				AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
				SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc"}},
				SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0abc"}},
				MetadataOptions:            &awsv1.MetadataOptions{HTTPTokens: ptr.To("optional")},
			},
		}
		create(t, c, ec2)
		got := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec2), got); err != nil {
			t.Fatal(err)
		}
		m := got.Spec.MetadataOptions
		if *m.HTTPTokens != "optional" || m.HTTPEndpoint == nil || *m.HTTPEndpoint != "enabled" || m.HTTPPutResponseHopLimit == nil || *m.HTTPPutResponseHopLimit != 1 {
			t.Errorf("metadataOptions = %+v, want httpTokens kept and the rest defaulted", m)
		}
	})
}

// TestNillableDurationThroughServer stores Never and a duration through the
// Go types and reads them back, and checks that a read-modify-write keeps
// the spelling (or NodeClaim's spec immutability would refuse it).
func TestNillableDurationThroughServer(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "durations"},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: defaultNodeClassRef,
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
				ExpireAfter:  karpv1.NeverDuration(),
			}},
			Disruption: karpv1.Disruption{ConsolidateAfter: karpv1.NewNillableDuration(90 * time.Second)},
		},
	}
	create(t, c, np)
	got := &karpv1.NodePool{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
		t.Fatal(err)
	}
	if !got.Spec.Template.Spec.ExpireAfter.IsNever() {
		t.Errorf("expireAfter = %q, want Never", got.Spec.Template.Spec.ExpireAfter)
	}
	if d, ok := got.Spec.Disruption.ConsolidateAfter.Duration(); !ok || d != 90*time.Second {
		t.Errorf("consolidateAfter = %q, want 1m30s", got.Spec.Disruption.ConsolidateAfter)
	}

	u := fromYAML(t, `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: durations}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [durations]}]
  expireAfter: 60m
  terminationGracePeriod: 90m
`)
	create(t, c, u)
	nc := &karpv1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), nc); err != nil {
		t.Fatal(err)
	}
	nc.Labels = map[string]string{"touched": "true"}
	if err := c.Update(ctx, nc); err != nil {
		t.Fatalf("read-modify-write of a NodeClaim through the Go types: %v", err)
	}
	if nc.Spec.ExpireAfter.String() != "60m" {
		t.Errorf("expireAfter spelled %q after update, want 60m", nc.Spec.ExpireAfter)
	}
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	ctx := testContext(t)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, obj) })
}
