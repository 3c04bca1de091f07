package nodeclass_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

const nodeRole = "KarpenterNodeRole-" + awstest.ClusterName

func newResolver(t *testing.T) (*awsemu.Emulator, *nodeclass.Resolver) {
	t.Helper()
	e, _ := awstest.Start(t, awsemu.Options{Seed: 7})
	c := awstest.Clients(e)
	return e, &nodeclass.Resolver{
		EC2: c.EC2, SSM: c.SSM, IAM: c.IAM, ClusterName: awstest.ClusterName, Region: e.Options().Region,
		KubernetesVersion: e.Options().KubernetesVersion, Clock: clocktesting.NewFakePassiveClock(time.Unix(1700000000, 0)),
	}
}

func discoveryClass(amiTerms ...awsv1.AMISelectorTerm) *awsv1.EC2NodeClass {
	if len(amiTerms) == 0 {
		amiTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	}
	disc := map[string]string{"karpenter.sh/discovery": awstest.ClusterName}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: disc}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
			AMISelectorTerms:           amiTerms,
			Role:                       nodeRole,
		},
	}
}

func cond(nc *awsv1.EC2NodeClass, t string) metav1.Condition {
	if c := nc.GetCondition(t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// recommended reads the SSM "recommended" AL2023 standard image of an
// architecture straight from the emulator: an oracle independent of the
// resolver's newest-image rule.
func recommended(e *awsemu.Emulator, arch string) string {
	k := e.Options().KubernetesVersion
	return e.SSMParameters()["/aws/service/eks/optimized-ami/"+k+"/amazon-linux-2023/"+arch+"/standard/recommended/image_id"]
}

func TestResolveDiscoveryClass(t *testing.T) {
	e, r := newResolver(t)
	got, err := r.Resolve(context.Background(), discoveryClass())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Subnets) != 3 {
		t.Errorf("subnets = %+v, want the 3 seeded ones", got.Status.Subnets)
	}
	zones := map[string]bool{}
	for _, s := range got.Status.Subnets {
		if s.Zone == "" || s.ZoneID == "" {
			t.Errorf("subnet %s lacks zone or zone id", s.ID)
		}
		zones[s.Zone] = true
	}
	if len(zones) != 3 {
		t.Errorf("subnets span zones %v, want 3", zones)
	}
	if len(got.Status.SecurityGroups) != 1 || !strings.HasSuffix(got.Status.SecurityGroups[0].Name, "-node") {
		t.Errorf("security groups = %+v, want the tagged node group only", got.Status.SecurityGroups)
	}
	if len(got.Status.AMIs) != 2 {
		t.Fatalf("amis = %+v, want one per architecture", got.Status.AMIs)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		a := got.Status.AMIs[i]
		if a.Requirements[0].Key != corev1.LabelArchStable || a.Requirements[0].Values[0] != arch {
			t.Errorf("ami %d requirements = %+v, want arch %s", i, a.Requirements, arch)
		}
	}
	if got.Status.AMIs[0].ID != recommended(e, "x86_64") || got.Status.AMIs[1].ID != recommended(e, "arm64") {
		t.Errorf("alias images = %s, %s; SSM recommends %s, %s", got.Status.AMIs[0].ID, got.Status.AMIs[1].ID, recommended(e, "x86_64"), recommended(e, "arm64"))
	}
	if got.Status.InstanceProfile != nodeclass.InstanceProfileName(awstest.ClusterName, e.Options().Region, "default") {
		t.Errorf("instance profile = %q", got.Status.InstanceProfile)
	}
	for _, ct := range []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeReady} {
		if c := cond(got, ct); c.Status != metav1.ConditionTrue {
			t.Errorf("%s = %+v, want True", ct, c)
		}
	}
}

func TestAMIByTagsPicksNewest(t *testing.T) {
	e, r := newResolver(t)
	// The seeded AL2023 standard images carry role=<cluster> in every
	// version; the newest of each architecture is what SSM recommends.
	amis, err := r.AMIs(context.Background(), discoveryClass(awsv1.AMISelectorTerm{Tags: map[string]string{"role": awstest.ClusterName}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(amis) != 2 || amis[0].ID != recommended(e, "x86_64") || amis[1].ID != recommended(e, "arm64") {
		t.Errorf("amis = %+v, want the SSM-recommended %s and %s", amis, recommended(e, "x86_64"), recommended(e, "arm64"))
	}
}

func TestAMIByIDNameAndParameter(t *testing.T) {
	e, r := newResolver(t)
	want := recommended(e, "arm64")
	tests := []struct {
		name string
		term awsv1.AMISelectorTerm
	}{
		{name: "id", term: awsv1.AMISelectorTerm{ID: want}},
		{name: "ssmParameter", term: awsv1.AMISelectorTerm{SSMParameter: "/aws/service/eks/optimized-ami/" + e.Options().KubernetesVersion + "/amazon-linux-2023/arm64/standard/recommended/image_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			amis, err := r.AMIs(context.Background(), discoveryClass(tc.term))
			if err != nil {
				t.Fatal(err)
			}
			if len(amis) != 1 || amis[0].ID != want {
				t.Errorf("amis = %+v, want only %s", amis, want)
			}
		})
	}
	// A name pattern with the amazon owner: the newest arm64 AL2023 image
	// of any variant; it must be at least as new as the recommended one.
	amis, err := r.AMIs(context.Background(), discoveryClass(awsv1.AMISelectorTerm{Name: "amazon-eks-node-al2023-arm64-standard-*", Owner: "amazon"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(amis) != 1 || amis[0].ID != want {
		t.Errorf("name term amis = %+v, want %s", amis, want)
	}
}

func TestSelectsNothing(t *testing.T) {
	_, r := newResolver(t)
	nc := discoveryClass(awsv1.AMISelectorTerm{Tags: map[string]string{"role": "nobody"}})
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-0000000000000dead"}}
	got, err := r.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ cond, reason, inMessage string }{
		{awsv1.ConditionTypeAMIsReady, nodeclass.ReasonAMINotFound, "tags role=nobody"},
		{awsv1.ConditionTypeSubnetsReady, nodeclass.ReasonSubnetsNotFound, "id subnet-0000000000000dead"},
		{awsv1.ConditionTypeReady, "", ""},
	}
	for _, tc := range tests {
		c := cond(got, tc.cond)
		if c.Status != metav1.ConditionFalse || (tc.reason != "" && c.Reason != tc.reason) || !strings.Contains(c.Message, tc.inMessage) {
			t.Errorf("%s = %+v, want False/%s mentioning %q", tc.cond, c, tc.reason, tc.inMessage)
		}
	}
	if c := cond(got, awsv1.ConditionTypeSecurityGroupsReady); c.Status != metav1.ConditionTrue {
		t.Errorf("SecurityGroupsReady = %+v, want True", c)
	}
}

func TestInstanceProfileLifecycle(t *testing.T) {
	e, r := newResolver(t)
	ctx := context.Background()
	nc := discoveryClass()
	name, err := r.InstanceProfile(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	iamc := awstest.Clients(e).IAM
	out, err := iamc.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	p := out.InstanceProfile
	if len(p.Roles) != 1 || aws.ToString(p.Roles[0].RoleName) != nodeRole {
		t.Errorf("roles = %+v, want %s", p.Roles, nodeRole)
	}
	tags := map[string]string{}
	for _, tg := range p.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags["kubernetes.io/cluster/"+awstest.ClusterName] != "owned" || tags[awsv1.TagNodeClass] != "default" || tags[nodeclass.TagRegion] != e.Options().Region {
		t.Errorf("tags = %v", tags)
	}
	// Resolving again creates nothing.
	e.ResetCalls()
	if again, err := r.InstanceProfile(ctx, nc); err != nil || again != name {
		t.Fatalf("second resolve = %q, %v", again, err)
	}
	for _, c := range e.Calls() {
		if c.Action != "iam:GetInstanceProfile" {
			t.Errorf("second resolve called %s", c.Action)
		}
	}
	// A role that does not exist is a False condition, not an error.
	nc.Spec.Role = "NoSuchRole"
	got, err := r.Resolve(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(got, awsv1.ConditionTypeInstanceProfileReady); c.Status != metav1.ConditionFalse || c.Reason != nodeclass.ReasonInstanceProfileNotFound || !strings.Contains(c.Message, "NoSuchRole") {
		t.Errorf("InstanceProfileReady = %+v", c)
	}
	// A given profile that does not exist.
	nc.Spec.Role = ""
	nc.Spec.InstanceProfile = aws.String("missing-profile")
	got, err = r.Resolve(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(got, awsv1.ConditionTypeInstanceProfileReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "missing-profile") {
		t.Errorf("InstanceProfileReady = %+v", c)
	}
}

func TestAliasParametersExist(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{})
	params := e.SSMParameters()
	k := e.Options().KubernetesVersion
	for _, alias := range []string{"al2023@latest", "al2@latest", "bottlerocket@latest"} {
		names, err := nodeclass.AliasParameters(alias, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if params[n] == "" {
				t.Errorf("%s: parameter %s does not exist in the emulator", alias, n)
			}
		}
	}
	if _, err := nodeclass.AliasParameters("windows2022@latest", k); err == nil {
		t.Error("windows alias resolved; want an unsupported-family error")
	}
}

// capacityReservationSelectorTerms resolve into status.capacityReservations
// (by id, or by tags and owner and match criteria; active ones only) and
// CapacityReservationsReady=True; an id that names no active reservation
// is a False condition naming it, the others still resolved, the class
// still Ready.
func TestCapacityReservationsResolve(t *testing.T) {
	e, r := newResolver(t)
	ctx := context.Background()
	ec2c := awstest.Clients(e).EC2
	zone := e.Options().Region + "a"
	create := func(typ string, n int32, match ec2types.InstanceMatchCriteria, tags map[string]string) string {
		t.Helper()
		in := &ec2.CreateCapacityReservationInput{InstanceType: aws.String(typ), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
			AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(n), InstanceMatchCriteria: match}
		for k, v := range tags {
			in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation,
				Tags: []ec2types.Tag{{Key: aws.String(k), Value: aws.String(v)}}}}
		}
		out, err := ec2c.CreateCapacityReservation(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.CapacityReservation.CapacityReservationId)
	}
	byID := create("c5.2xlarge", 3, ec2types.InstanceMatchCriteriaTargeted, nil)
	tagged := create("m5.large", 2, ec2types.InstanceMatchCriteriaOpen, map[string]string{"team": "ml"})
	cancelled := create("m5.large", 1, ec2types.InstanceMatchCriteriaOpen, map[string]string{"team": "ml"})
	create("m5.large", 1, ec2types.InstanceMatchCriteriaOpen, map[string]string{"team": "web"})
	if _, err := ec2c.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(cancelled)}); err != nil {
		t.Fatal(err)
	}

	nc := discoveryClass()
	out, err := r.Resolve(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(out, awsv1.ConditionTypeCapacityReservationsReady); c.Status != metav1.ConditionTrue || len(out.Status.CapacityReservations) != 0 {
		t.Errorf("without reservation terms: %+v, %v", c, out.Status.CapacityReservations)
	}
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{
		{ID: byID}, {Tags: map[string]string{"team": "ml"}, OwnerID: e.Options().AccountID},
	}
	out, err = r.Resolve(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(out, awsv1.ConditionTypeCapacityReservationsReady); c.Status != metav1.ConditionTrue {
		t.Errorf("resolved terms: %+v", c)
	}
	var got []string
	for _, cr := range out.Status.CapacityReservations {
		got = append(got, cr.ID+" "+cr.InstanceType+" "+cr.AvailabilityZone+" "+cr.InstanceMatchCriteria+" "+cr.ReservationType+" "+cr.OwnerID)
	}
	want := []string{
		byID + " c5.2xlarge " + zone + " targeted default " + e.Options().AccountID,
		tagged + " m5.large " + zone + " open default " + e.Options().AccountID,
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("status.capacityReservations:\n got %q\nwant %q", got, want)
	}

	// Bad input: an id that does not exist, and one cancelled.
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: byID}, {ID: "cr-0123456789abcdef0"}, {ID: cancelled}}
	out, err = r.Resolve(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	c := cond(out, awsv1.ConditionTypeCapacityReservationsReady)
	if c.Status != metav1.ConditionFalse || c.Reason != nodeclass.ReasonCapacityReservationNotFound ||
		!strings.Contains(c.Message, "cr-0123456789abcdef0 (spec.capacityReservationSelectorTerms[1].id)") || !strings.Contains(c.Message, cancelled) {
		t.Errorf("with a missing id: %+v", c)
	}
	if len(out.Status.CapacityReservations) != 1 || out.Status.CapacityReservations[0].ID != byID {
		t.Errorf("the existing reservation is not kept: %v", out.Status.CapacityReservations)
	}
	if !out.IsTrue(awsv1.ConditionTypeReady) {
		t.Errorf("the class is not Ready: %+v", out.Status.Conditions)
	}
}

// The fields acted on leave SpecSupported True; what is still not done
// (free-form kubelet keys outside AL2023, types not narrowed for nested
// virtualization) and what
// EC2 refuses (a public IP with two addressed interfaces) is named in
// SpecSupported=False; the class stays Ready.
func TestUnsupportedFieldsMarked(t *testing.T) {
	_, r := newResolver(t)
	nc := discoveryClass()
	if nc.AMIFamily() != awsv1.AMIFamilyAL2023 {
		t.Fatalf("test setup: family %s", nc.AMIFamily())
	}
	var kubelet awsv1.KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"maxPods": 20, "cpuManagerPolicy": "static", "topologyManagerPolicy": "best-effort"}`), &kubelet); err != nil {
		t.Fatal(err)
	}
	nc.Spec.Kubelet = &kubelet
	nc.Spec.IPPrefixCount = ptr(int32(2))
	nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: "disabled"}
	nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: ptr(false)}
	nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
	nc.Spec.AssociatePublicIPAddress = ptr(true)
	out, err := r.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(out, awsv1.ConditionTypeSpecSupported); c.Status != metav1.ConditionTrue {
		t.Errorf("class with only acted-on fields: %+v", c)
	}
	nc.Spec.NetworkInterfaces = append(nc.Spec.NetworkInterfaces, awsv1.NetworkInterface{NetworkCardIndex: 1, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeInterface})
	nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: "enabled"}
	nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: ptr(true)}
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr(int32(30))}
	nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyBottlerocket)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	out, err = r.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	c := cond(out, awsv1.ConditionTypeSpecSupported)
	for _, f := range []string{"spec.kubelet.cpuManagerPolicy", "spec.kubelet.topologyManagerPolicy", "spec.associatePublicIPAddress with spec.networkInterfaces (EC2 refuses",
		"spec.cpuOptions.nestedVirtualization (in the launch template, but instance types are not narrowed"} {
		if !strings.Contains(c.Message, f) {
			t.Errorf("SpecSupported message %q does not name %s", c.Message, f)
		}
	}
	// These narrow the instance types (instancetype.NarrowingFor).
	for _, f := range []string{"maxPods", "ipPrefixCount", "spec.enclaveOptions", "spec.connectionTracking", "; spec.networkInterfaces", "placementGroup"} {
		if strings.Contains(c.Message, f) {
			t.Errorf("SpecSupported message %q names %s, which is acted on", c.Message, f)
		}
	}
	if c.Status != metav1.ConditionFalse {
		t.Errorf("SpecSupported = %+v", c)
	}
	if !out.IsTrue(awsv1.ConditionTypeReady) {
		t.Error("the class is not Ready")
	}
}
func ptr[T any](v T) *T { return &v }
