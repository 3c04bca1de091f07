package aws_test

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/userdata"
)

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func ptr[T any](v T) *T { return &v }

func pool(e *env, nc *awsv1.EC2NodeClass) *karpv1.NodePool {
	return &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
		NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name},
	}}}}
}

// TestCreateAL2023 launches one on-demand node and checks everything the
// instance and the returned NodeClaim carry.
func TestCreateAL2023(t *testing.T) {
	e := newEnv(t, envOptions{})
	claim := e.claim(
		in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand),
		in(awsv1.LabelInstanceCategory, "m", "c"),
		in(karpv1.LabelArch, "amd64"),
	)
	got, err := e.p.Create(e.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	inst := e.instanceOf(got.Status.ProviderID)

	// The NodeClaim.
	if got.Status.ProviderID != "aws:///"+inst.Zone+"/"+inst.ID {
		t.Errorf("providerID %q", got.Status.ProviderID)
	}
	wantLabels := map[string]string{
		karpv1.LabelInstanceType: inst.InstanceType, karpv1.LabelTopologyZone: inst.Zone, awsv1.LabelTopologyZoneID: inst.ZoneID,
		karpv1.CapacityTypeLabelKey: "on-demand", karpv1.LabelArch: "amd64", karpv1.LabelTopologyRegion: e.emu.Options().Region,
		karpv1.NodePoolLabelKey: "default",
	}
	for k, v := range wantLabels {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if cat := got.Labels[awsv1.LabelInstanceCategory]; cat != "m" && cat != "c" {
		t.Errorf("instance category %q violates the requirement", cat)
	}
	if got.Status.ImageID != inst.ImageID || got.Status.ImageID == "" {
		t.Errorf("imageID %q, instance has %q", got.Status.ImageID, inst.ImageID)
	}
	if cpu := got.Status.Allocatable[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) < 0 {
		t.Errorf("allocatable cpu %v below the requested 1", cpu.String())
	}
	if got.Status.Capacity.Memory().Cmp(*got.Status.Allocatable.Memory()) <= 0 {
		t.Errorf("capacity memory %v not above allocatable %v", got.Status.Capacity.Memory(), got.Status.Allocatable.Memory())
	}
	if got.Annotations[awsv1.AnnotationEC2NodeClassHash] != nodeclass.Hash(e.class) || got.Annotations[awsv1.AnnotationInstanceTagged] != "true" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if claim.Status.ProviderID != "" {
		t.Error("Create modified its argument")
	}

	// The instance: tags, IMDSv2, volumes, profile.
	wantTags := map[string]string{
		"kubernetes.io/cluster/" + awstest.ClusterName: "owned", "eks:eks-cluster-name": awstest.ClusterName,
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": claim.Name, "karpenter.k8s.aws/ec2nodeclass": e.class.Name,
		"Name": claim.Name,
	}
	for k, v := range wantTags {
		if inst.Tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q", k, inst.Tags[k], v)
		}
	}
	if inst.MetadataOptions.HTTPTokens != "required" || inst.MetadataOptions.HTTPPutResponseHopLimit != 1 || inst.MetadataOptions.HTTPEndpoint != "enabled" {
		t.Errorf("metadata options %+v, want IMDSv2 required with hop limit 1", inst.MetadataOptions)
	}
	if len(inst.BlockDevices) != 1 || inst.BlockDevices[0].DeviceName != "/dev/xvda" || inst.BlockDevices[0].VolumeSizeGiB != 20 || inst.BlockDevices[0].VolumeType != "gp3" {
		t.Errorf("block devices %+v, want one 20 GiB gp3 /dev/xvda", inst.BlockDevices)
	}
	if !strings.Contains(inst.InstanceProfileARN, e.class.Status.InstanceProfile) || e.class.Status.InstanceProfile == "" {
		t.Errorf("instance profile %q, class uses %q", inst.InstanceProfileARN, e.class.Status.InstanceProfile)
	}
	if !strings.HasPrefix(inst.LaunchTemplateName, "dovetail/"+awstest.ClusterName+"/") {
		t.Errorf("launch template %q", inst.LaunchTemplateName)
	}
	if inst.CapacityType != "on-demand" {
		t.Errorf("capacity type %q", inst.CapacityType)
	}

	// The user data the instance booted with: what its kubelet registers.
	node, err := userdata.Parse(awsv1.AMIFamilyAL2023, inst.UserData)
	if err != nil {
		t.Fatalf("parsing the instance's user data: %v", err)
	}
	wantNodeLabels := map[string]string{karpv1.NodePoolLabelKey: "default", "team": "b", karpv1.CapacityTypeLabelKey: "on-demand", karpv1.LabelArch: "amd64"}
	if !reflect.DeepEqual(node.Labels, wantNodeLabels) {
		t.Errorf("user data labels %v, want %v", node.Labels, wantNodeLabels)
	}
	wantTaints := []corev1.Taint{
		{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "b", Effect: corev1.TaintEffectNoSchedule},
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
	}
	if !reflect.DeepEqual(node.Taints, wantTaints) {
		t.Errorf("user data taints %v, want %v", node.Taints, wantTaints)
	}
	if node.ClusterName != awstest.ClusterName || node.APIServerEndpoint != e.emu.Options().ClusterEndpoint {
		t.Errorf("user data cluster %q at %q", node.ClusterName, node.APIServerEndpoint)
	}
}

// TestCheapestCompatibleOnDemand: with a fixed set of types, the launch
// gets the cheapest of them (the on-demand price is the same in every
// zone, so the type decides).
func TestCheapestCompatibleOnDemand(t *testing.T) {
	e := newEnv(t, envOptions{})
	candidates := []string{"m5.xlarge", "c5.xlarge", "m6i.xlarge", "r5.xlarge"}
	types, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class))
	if err != nil {
		t.Fatal(err)
	}
	want, best := "", -1.0
	for _, it := range types {
		if !slices.Contains(candidates, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == "on-demand" && (best < 0 || o.Price < best) {
				want, best = it.Name, o.Price
			}
		}
	}
	got, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, candidates...)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[karpv1.LabelInstanceType] != want || got.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" {
		t.Errorf("launched %s (%s); the cheapest on-demand candidate is %s", got.Labels[karpv1.LabelInstanceType], got.Labels[karpv1.CapacityTypeLabelKey], want)
	}
}

func TestLaunchTemplateReuse(t *testing.T) {
	e := newEnv(t, envOptions{})
	ltOf := func(c *karpv1.NodeClaim) string {
		got, err := e.p.Create(e.ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return e.instanceOf(got.Status.ProviderID).LaunchTemplateName
	}
	req := in(karpv1.LabelArch, "amd64")
	first := ltOf(e.claim(req))
	second := ltOf(e.claim(req))
	if first != second {
		t.Errorf("identical launches used templates %s and %s", first, second)
	}
	creates := 0
	for _, c := range e.emu.Calls() {
		if c.Action == "ec2:CreateLaunchTemplate" && c.ErrorCode != "DryRunOperation" { // not the class's dry-run validation
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("%d CreateLaunchTemplate calls for identical content, want 1", creates)
	}
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"cost-center": "42"} })
	third := ltOf(e.claim(req))
	if third == first {
		t.Errorf("changed content reused template %s", first)
	}
	// The new template's instance carries the class's tag.
	if got := e.emu.Instances(); got[len(got)-1].Tags["cost-center"] != "42" {
		t.Errorf("the class's tag is missing: %v", got[len(got)-1].Tags)
	}
}

// cheapestSpot returns the available spot offerings of the types,
// cheapest first.
func spotOfferings(types []*cloudprovider.InstanceType, names []string) []cloudprovider.OfferingKey {
	type priced struct {
		k     cloudprovider.OfferingKey
		price float64
	}
	var all []priced
	for _, it := range types {
		if !slices.Contains(names, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == "spot" && o.Available {
				all = append(all, priced{cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: "spot"}, o.Price})
			}
		}
	}
	slices.SortFunc(all, func(a, b priced) int {
		if a.price != b.price {
			if a.price < b.price {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k.String(), b.k.String())
	})
	out := make([]cloudprovider.OfferingKey, len(all))
	for i, p := range all {
		out[i] = p.k
	}
	return out
}

func TestSpotFallsBackToNextCheapest(t *testing.T) {
	e := newEnv(t, envOptions{})
	names := []string{"m5.large", "m5.xlarge", "c5.large", "c5.xlarge", "m6i.large"}
	types, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class))
	if err != nil {
		t.Fatal(err)
	}
	order := spotOfferings(types, names)
	if len(order) < 4 {
		t.Fatalf("only %d spot offerings", len(order))
	}
	// Take away the three cheapest spot offerings.
	for _, k := range order[:3] {
		e.emu.InjectICE(k.InstanceType, k.Zone, "spot")
	}
	got, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, names...), in(karpv1.CapacityTypeLabelKey, "spot")))
	if err != nil {
		t.Fatal(err)
	}
	launched := cloudprovider.OfferingKey{InstanceType: got.Labels[karpv1.LabelInstanceType], Zone: got.Labels[karpv1.LabelTopologyZone], CapacityType: got.Labels[karpv1.CapacityTypeLabelKey]}
	if launched != order[3] {
		t.Errorf("launched %v; the next cheapest spot offering after the ICE'd %v is %v", launched, order[:3], order[3])
	}
	// The refused offerings are now marked unavailable.
	types, err = e.p.GetInstanceTypes(e.ctx, pool(e, e.class))
	if err != nil {
		t.Fatal(err)
	}
	after := spotOfferings(types, names)
	for _, k := range order[:3] {
		if slices.Contains(after, k) {
			t.Errorf("%v is still available after EC2 refused it", k)
		}
	}
}

func TestAllSpotInsufficientCapacity(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.emu.InjectICE("", "", "spot")
	names := []string{"m5.large", "c5.large", "m6g.large", "c6g.large"}
	_, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, names...), in(karpv1.CapacityTypeLabelKey, "spot")))
	if !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("Create = %v, want InsufficientCapacityError", err)
	}
	// Every spot offering of those types is marked; on-demand is not.
	types, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class))
	if err != nil {
		t.Fatal(err)
	}
	spotLeft, odLeft := 0, 0
	for _, it := range types {
		if !slices.Contains(names, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			if o.CapacityType == "spot" {
				spotLeft++
			} else {
				odLeft++
			}
		}
	}
	if spotLeft != 0 || odLeft == 0 {
		t.Errorf("%d spot and %d on-demand offerings available after the spot ICE; want 0 and some", spotLeft, odLeft)
	}
	// A retry of the spot-only claim fails at once, without calling EC2.
	before := len(e.emu.Calls())
	if _, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, names...), in(karpv1.CapacityTypeLabelKey, "spot"))); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("retry = %v, want InsufficientCapacityError", err)
	}
	if n := len(e.emu.Calls()) - before; n != 0 {
		t.Errorf("the retry made %d AWS calls", n)
	}
	// The seed pattern's fallback: a claim allowing both gets on-demand.
	got, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, names...), in(karpv1.CapacityTypeLabelKey, "spot", "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" {
		t.Errorf("fallback launched %s", got.Labels[karpv1.CapacityTypeLabelKey])
	}
}

func TestSpotPreferredWhenCheaper(t *testing.T) {
	e := newEnv(t, envOptions{})
	got, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, "m5.large", "c5.large"), in(karpv1.CapacityTypeLabelKey, "spot", "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[karpv1.CapacityTypeLabelKey] != "spot" {
		t.Errorf("launched %s; spot is cheaper in the catalog", got.Labels[karpv1.CapacityTypeLabelKey])
	}
}

func TestGetListDelete(t *testing.T) {
	e := newEnv(t, envOptions{})
	launched, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "arm64")))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.p.Get(e.ctx, launched.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != launched.Name || got.Labels[karpv1.LabelInstanceType] != launched.Labels[karpv1.LabelInstanceType] || got.Status.ImageID != launched.Status.ImageID {
		t.Errorf("Get = %s %v %s, launched %s %v %s", got.Name, got.Labels[karpv1.LabelInstanceType], got.Status.ImageID,
			launched.Name, launched.Labels[karpv1.LabelInstanceType], launched.Status.ImageID)
	}
	list, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Status.ProviderID != launched.Status.ProviderID {
		t.Fatalf("List = %d claims, want the launched one", len(list))
	}
	if err := e.p.Delete(e.ctx, launched); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	// Termination takes a moment; Delete returns NodeClaimNotFound once done.
	pollUntil(t, "Delete to report the instance gone", 30*time.Second, func() (bool, error) {
		err := e.p.Delete(e.ctx, launched)
		if cloudprovider.IsNodeClaimNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if _, err := e.p.Get(e.ctx, launched.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Get after termination = %v, want NodeClaimNotFound", err)
	}
	if list, err := e.p.List(e.ctx); err != nil || len(list) != 0 {
		t.Errorf("List after termination = %d, %v", len(list), err)
	}
	// Delete by NodeClaim tag (no providerID yet) finds a launched instance.
	other, err := e.p.Create(e.ctx, e.claim())
	if err != nil {
		t.Fatal(err)
	}
	noID := other.DeepCopy()
	noID.Status.ProviderID = ""
	if err := e.p.Delete(e.ctx, noID); err != nil {
		t.Fatalf("Delete by tag: %v", err)
	}
	pollUntil(t, "the tagged instance to terminate", 30*time.Second, func() (bool, error) {
		_, err := e.p.Get(e.ctx, other.Status.ProviderID)
		return cloudprovider.IsNodeClaimNotFound(err), nil
	})
	if _, err := e.p.Get(e.ctx, "aws:///us-east-1a/i-0000000000000dead"); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Get of an unknown instance = %v", err)
	}
	// Another provider's prefix: looked up by its instance id and found
	// missing, so garbage collection deletes such a NodeClaim (the peer's
	// regression suite writes "Provider:///AZ/i-...").
	if _, err := e.p.Get(e.ctx, "Provider:///AZ/i-01234567890123456"); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Get of another provider's providerID = %v, want NodeClaimNotFound", err)
	}
}

// TestGarbageProviderID: a NodeClaim whose status.providerID is garbage
// (escapes, a path) names no instance: Get says NodeClaimNotFound, so
// garbage collection deletes the claim instead of failing on it every
// sweep, and Delete still terminates the instance the claim launched,
// found by its tag.
func TestGarbageProviderID(t *testing.T) {
	e := newEnv(t, envOptions{})
	launched, err := e.p.Create(e.ctx, e.claim())
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []string{"aws:///us-east-1a/i-../../../x", "aws:///us-east-1a/i-..\x1b[2J", "aws:///us-east-1a/i-"} {
		if _, err := e.p.Get(e.ctx, pid); !cloudprovider.IsNodeClaimNotFound(err) {
			t.Errorf("Get(%q) = %v, want NodeClaimNotFound", pid, err)
		}
	}
	garbage := launched.DeepCopy()
	garbage.Status.ProviderID = "aws:///us-east-1a/i-../../../x"
	if err := e.p.Delete(e.ctx, garbage); err != nil {
		t.Fatalf("Delete with a garbage providerID: %v", err)
	}
	pollUntil(t, "the claim's instance to terminate", 30*time.Second, func() (bool, error) {
		_, err := e.p.Get(e.ctx, launched.Status.ProviderID)
		return cloudprovider.IsNodeClaimNotFound(err), nil
	})
}

// TestDeleteLeavesAnotherClaimsInstance: a NodeClaim whose providerID names
// another NodeClaim's instance (a copied status) does not terminate it.
func TestDeleteLeavesAnotherClaimsInstance(t *testing.T) {
	e := newEnv(t, envOptions{})
	owner, err := e.p.Create(e.ctx, e.claim())
	if err != nil {
		t.Fatal(err)
	}
	impostor := owner.DeepCopy()
	impostor.Name = owner.Name + "-impostor"
	if err := e.p.Delete(e.ctx, impostor); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Fatalf("Delete of an impostor = %v, want NodeClaimNotFound", err)
	}
	if _, err := e.p.Get(e.ctx, owner.Status.ProviderID); err != nil {
		t.Fatalf("the owner's instance after the impostor's Delete: %v", err)
	}
	for _, c := range e.emu.Calls() {
		if c.Action == "ec2:TerminateInstances" {
			t.Fatalf("TerminateInstances was called for an impostor")
		}
	}
	// A Node whose NodeClaim is gone: node termination names no claim, and
	// the instance is terminated by its providerID alone.
	claimless := &karpv1.NodeClaim{}
	claimless.Status.ProviderID = owner.Status.ProviderID
	if err := e.p.Delete(e.ctx, claimless); err != nil {
		t.Fatalf("Delete by providerID alone = %v", err)
	}
	terminated := false
	for _, c := range e.emu.Calls() {
		terminated = terminated || c.Action == "ec2:TerminateInstances"
	}
	if !terminated {
		t.Fatalf("no TerminateInstances for a Delete by providerID alone")
	}
}

func TestDrift(t *testing.T) {
	e := newEnv(t, envOptions{})
	launched, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	describes := func() int {
		n := 0
		for _, c := range e.emu.Calls() {
			if c.Action == "ec2:DescribeInstances" {
				n++
			}
		}
		return n
	}
	before := describes()
	checks := 0
	check := func(want cloudprovider.DriftReason) {
		t.Helper()
		checks++
		got, err := e.p.IsDrifted(e.ctx, launched)
		if err != nil || got != want {
			t.Errorf("IsDrifted = %q, %v; want %q", got, err, want)
		}
	}
	check("")
	// An older image selected by version: the running image is no longer
	// selected.
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) {
		s.AMIFamily = ptr(awsv1.AMIFamilyAL2023)
		s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"role": "nobody-uses-this"}}, {Name: "amazon-eks-node-al2023-x86_64-standard-*-v20250901", Owner: "amazon"}}
	})
	if len(e.class.Status.AMIs) != 1 || e.class.Status.AMIs[0].ID == launched.Status.ImageID {
		t.Fatalf("test setup: status AMIs %+v", e.class.Status.AMIs)
	}
	check(cloudprovider.DriftImage)
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) {
		s.AMIFamily = nil
		s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	})
	check("")
	// A subnet no longer selected.
	inst := e.instanceOf(launched.Status.ProviderID)
	var others []awsv1.SubnetSelectorTerm
	for _, s := range e.class.Status.Subnets {
		if s.ID != inst.SubnetID {
			others = append(others, awsv1.SubnetSelectorTerm{ID: s.ID})
		}
	}
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) { s.SubnetSelectorTerms = others })
	check(cloudprovider.DriftSubnet)
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) { s.SubnetSelectorTerms = discoverySpec().SubnetSelectorTerms })
	// A different security group.
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) {
		s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "default"}}
	})
	check(cloudprovider.DriftSecurityGroup)
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) {
		s.SecurityGroupSelectorTerms = discoverySpec().SecurityGroupSelectorTerms
	})
	check("")
	// A static field.
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"new": "tag"} })
	check(cloudprovider.DriftNodeClass)
	// An old hash version is not judged by hash.
	old := launched.DeepCopy()
	old.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "v0"
	if got, err := e.p.IsDrifted(e.ctx, old); err != nil || got != "" {
		t.Errorf("IsDrifted with another hash version = %q, %v", got, err)
	}
	// The instance is read as launched: drift checks cost no call.
	if n := describes() - before; n != 0 {
		t.Errorf("%d DescribeInstances calls for %d drift checks of an instance launched %s ago, want 0", n, checks+1, awsprovider.DriftMaxAge)
	}
}

func TestNodeClassNotReady(t *testing.T) {
	e := newEnv(t, envOptions{})
	spec := discoverySpec()
	spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"role": "nobody"}}}
	spec.AMIFamily = ptr(awsv1.AMIFamilyAL2023)
	bad := e.createClass(spec)
	c := bad.GetCondition(awsv1.ConditionTypeAMIsReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != nodeclass.ReasonAMINotFound || !strings.Contains(c.Message, "role=nobody") {
		t.Fatalf("AMIsReady = %+v", c)
	}
	_, err := e.p.Create(e.ctx, e.claimFor(bad, "default"))
	if !cloudprovider.IsNodeClassNotReady(err) {
		t.Errorf("Create = %v, want NodeClassNotReadyError", err)
	}
	if _, err := e.p.GetInstanceTypes(e.ctx, pool(e, bad)); !cloudprovider.IsNodeClassNotReady(err) {
		t.Errorf("GetInstanceTypes = %v, want NodeClassNotReadyError", err)
	}
	missing := e.claim()
	missing.Spec.NodeClassRef.Name = "does-not-exist"
	if _, err := e.p.Create(e.ctx, missing); !cloudprovider.IsNodeClassNotReady(err) {
		t.Errorf("Create with a missing class = %v", err)
	}
}

func TestNoCompatibleTypes(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelInstanceType, "m5.large"), in(karpv1.LabelArch, "arm64")))
	var ce *cloudprovider.CreateError
	if !asCreateError(err, &ce) || ce.Reason != awsprovider.ReasonNoCompatibleInstanceTypes {
		t.Errorf("Create = %v, want CreateError %s", err, awsprovider.ReasonNoCompatibleInstanceTypes)
	}
}

func TestBottlerocketLaunch(t *testing.T) {
	e := newEnv(t, envOptions{})
	spec := discoverySpec()
	spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	maxPods := int32(33)
	spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: &maxPods}
	br := e.createClass(spec)
	got, err := e.p.Create(e.ctx, e.claimFor(br, "br", in(karpv1.LabelArch, "arm64")))
	if err != nil {
		t.Fatal(err)
	}
	inst := e.instanceOf(got.Status.ProviderID)
	if len(inst.BlockDevices) != 2 || inst.BlockDevices[0].VolumeSizeGiB != 4 || inst.BlockDevices[1].DeviceName != "/dev/xvdb" || inst.BlockDevices[1].VolumeSizeGiB != 20 {
		t.Errorf("block devices %+v, want 4 GiB /dev/xvda and 20 GiB /dev/xvdb", inst.BlockDevices)
	}
	node, err := userdata.Parse(awsv1.AMIFamilyBottlerocket, inst.UserData)
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[karpv1.NodePoolLabelKey] != "br" || node.MaxPods == nil || *node.MaxPods != 33 {
		t.Errorf("bottlerocket settings: labels %v maxPods %v", node.Labels, node.MaxPods)
	}
	if pods := got.Status.Capacity[corev1.ResourcePods]; pods.Value() != 33 {
		t.Errorf("capacity pods %v, want 33", pods.String())
	}
}

// TestConcurrentLaunchesCostOneCallEach: 40 concurrent launches of one
// pool make one CreateFleet (batched) and one CreateTags per instance (its
// NodeClaim's name), and nothing is described. Each instance carries the
// tags of its own NodeClaim.
func TestConcurrentLaunchesCostOneCallEach(t *testing.T) {
	// Generous windows: the check is about combining, not timing, and must
	// hold on a loaded machine (or under -race).
	e := newEnv(t, envOptions{provider: awsprovider.Options{BatchIdle: 200 * time.Millisecond, BatchMax: 3 * time.Second}})
	if _, err := e.p.Create(e.ctx, e.claim()); err != nil { // warm the caches
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var mu sync.Mutex
	ids2claim := map[string]string{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// As the API server returns it (UID, creation time): the
			// launch carries a client token and is not looked up.
			claim := e.freshClaim()
			got, err := e.p.Create(e.ctx, claim)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			ids2claim[got.Status.ProviderID] = claim.Name
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ids := ids2claim
	distinct := map[string]string{} // instance id -> NodeClaim
	for id, claim := range ids {
		distinct[id[strings.LastIndexByte(id, '/')+1:]] = claim
	}
	if len(distinct) != n {
		t.Errorf("%d distinct instances for %d launches", len(distinct), n)
	}
	counts := map[string]int{}
	for _, c := range e.emu.Calls() {
		counts[c.Action]++
	}
	t.Logf("calls for %d concurrent launches: %v", n, counts)
	if total := len(e.emu.Calls()); total > n+1 {
		t.Errorf("%d EC2 calls for %d launches (%v), want at most one each and the fleet", total, n, counts)
	}
	if counts["ec2:CreateFleet"] != 1 || counts["ec2:CreateTags"] != n || counts["ec2:DescribeInstances"] != 0 {
		t.Errorf("calls %v, want one CreateFleet, %d CreateTags, no DescribeInstances", counts, n)
	}
	for _, in := range e.emu.Instances() {
		want, ok := distinct[in.ID]
		if !ok {
			continue
		}
		if in.Tags[karpv1.NodeClaimTagKey] != want || in.Tags[awsv1.TagName] != want {
			t.Errorf("instance %s tagged nodeclaim=%q Name=%q, want %q", in.ID, in.Tags[karpv1.NodeClaimTagKey], in.Tags[awsv1.TagName], want)
		}
	}
}

// TestThrottledLaunches: with 30% of all calls throttled (seeded), 100
// launches all succeed and use at most 3x the calls of unthrottled ones.
func TestThrottledLaunches(t *testing.T) {
	run := func(fraction float64) int {
		e := newEnv(t, envOptions{})
		if _, err := e.p.Create(e.ctx, e.claim()); err != nil { // warm the caches
			t.Fatal(err)
		}
		e.emu.ResetCalls()
		e.emu.SetThrottle(fraction, 2026)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failures []error
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.p.Create(e.ctx, e.claim()); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		e.emu.ClearFaults()
		if len(failures) > 0 {
			t.Fatalf("%d of 100 launches failed at throttle %.0f%%; first: %v", len(failures), fraction*100, failures[0])
		}
		return len(e.emu.Calls())
	}
	plain := run(0)
	throttled := run(0.3)
	t.Logf("100 launches: %d API calls unthrottled, %d with 30%% throttling (%.2fx)", plain, throttled, float64(throttled)/float64(plain))
	if throttled > 3*plain {
		t.Errorf("throttled launches used %d calls, more than 3x the %d of unthrottled ones", throttled, plain)
	}
}

// TestNoCredentialInLogs runs launches, a throttled stretch and a failure
// with all logging on, and checks the dummy credentials appear nowhere.
func TestNoCredentialInLogs(t *testing.T) {
	e := newEnv(t, envOptions{})
	// 30% of calls throttled: retries (and their logs) happen on most
	// launches, and ten failed attempts in a row stay out of reach (0.3^10).
	e.emu.SetThrottle(0.3, 1)
	for range 5 {
		if _, err := e.p.Create(e.ctx, e.claim()); err != nil {
			t.Fatal(err)
		}
	}
	e.emu.ClearFaults()
	e.emu.InjectICE("", "", "")
	_, _ = e.p.Create(e.ctx, e.claim())
	logs := e.logs.String()
	if len(logs) == 0 {
		t.Fatal("nothing was logged; the check would prove nothing")
	}
	for _, secret := range []string{awstest.AccessKeyID, awstest.SecretAccessKey, awstest.SessionToken} {
		if strings.Contains(logs, secret) {
			t.Errorf("a credential appears in the logs")
		}
	}
}

func TestProviderIDRoundTrip(t *testing.T) {
	tests := []struct {
		in, wantID string
		wantErr    bool
	}{
		{in: "aws:///us-east-1a/i-0123456789abcdef0", wantID: "i-0123456789abcdef0"},
		{in: "aws:///us-east-1a/vol-1", wantErr: true},
		{in: "gce://p/z/i", wantErr: true},
		{in: "aws:///i-1", wantErr: true},
		{in: "Provider:///AZ/i-01234567890123456", wantID: "i-01234567890123456"},
		{in: ":///AZ/i-1", wantErr: true},
		{in: "aws:////i-1", wantErr: true},
		{in: "aws:///us-east-1a/i-../../../x", wantErr: true},
		{in: "aws:///us-east-1a/i-..\x1b[2J", wantErr: true},
		{in: "aws:///us-east-1a/i-", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			id, err := awsprovider.ParseProviderID(tc.in)
			if (err != nil) != tc.wantErr || id != tc.wantID {
				t.Errorf("ParseProviderID(%q) = %q, %v", tc.in, id, err)
			}
		})
	}
	if got := awsprovider.ProviderID("us-east-1a", "i-1"); got != "aws:///us-east-1a/i-1" {
		t.Errorf("ProviderID = %q", got)
	}
}

func asCreateError(err error, target **cloudprovider.CreateError) bool {
	return errorsAs(err, target)
}

// Reboot reboots the NodeClaim's instance in place through EC2
// RebootInstances (allowed by the RebootForRepair policy only: the IAM
// check at the end of the test); a terminated instance is NodeClaimNotFound.
// RepairPolicies reboot the reboot-clearable GPU faults only with the gate.
func TestRebootForRepair(t *testing.T) {
	e := newEnv(t, envOptions{provider: awsprovider.Options{RebootForRepair: true}})
	launched, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	id := launched.Status.ProviderID[strings.LastIndexByte(launched.Status.ProviderID, '/')+1:]
	pollUntil(t, "the instance running", 30*time.Second, func() (bool, error) {
		in, ok := e.emu.Instance(id)
		return ok && in.State == awsemu.StateRunning, nil
	})
	if err := e.p.Reboot(e.ctx, launched); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	pollUntil(t, "the reboot to end", 30*time.Second, func() (bool, error) {
		in, _ := e.emu.Instance(id)
		return in.Reboots == 1, nil
	})
	if in, _ := e.emu.Instance(id); in.State != awsemu.StateRunning {
		t.Errorf("instance %s after the reboot, want running", in.State)
	}
	reboots := 0
	for _, c := range e.emu.Calls() {
		if c.Action == "ec2:RebootInstances" {
			reboots++
		}
	}
	if reboots != 1 {
		t.Errorf("%d RebootInstances calls, want 1", reboots)
	}
	rebootPolicies := func(ps []cloudprovider.RepairPolicy) int {
		n := 0
		for _, p := range ps {
			if p.Action == cloudprovider.RepairReboot {
				n++
			}
		}
		return n
	}
	if n := rebootPolicies(e.p.RepairPolicies()); n != 1 {
		t.Errorf("%d reboot policies with RebootForRepair, want 1 (the reboot-clearable XIDs)", n)
	}
	off := e.opts
	off.RebootForRepair = false
	plain, err := awsprovider.New(e.ctx, e.cfg, off)
	if err != nil {
		t.Fatal(err)
	}
	if n := rebootPolicies(plain.RepairPolicies()); n != 0 {
		t.Errorf("%d reboot policies without RebootForRepair, want 0", n)
	}
	if err := e.p.Delete(e.ctx, launched); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the instance terminated", 30*time.Second, func() (bool, error) {
		return cloudprovider.IsNodeClaimNotFound(e.p.Delete(e.ctx, launched)), nil
	})
	if err := e.p.Reboot(e.ctx, launched); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Reboot of a terminated instance = %v, want NodeClaimNotFound", err)
	}
}
