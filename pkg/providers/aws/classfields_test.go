package aws_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
)

// TestDriftClassFields: changing each EC2NodeClass field acted on since
// issue 33 drifts a launched NodeClaim (static hash), as the peer's hash
// does; ipPrefixCount, outside the peer's hash, does not. The launch
// itself carried the class's fields to EC2 through its launch template.
func TestDriftClassFields(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.testCalls = map[string]bool{"ec2:DescribeLaunchTemplateVersions": true, "ec2:CreatePlacementGroup": true}
	if _, err := awstest.Clients(e.emu).EC2.CreatePlacementGroup(e.ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("pg"), Strategy: "cluster"}); err != nil {
		t.Fatal(err)
	}
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) {
		s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: "disabled"}
		s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: aws.Bool(false)}
		s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: aws.Int32(30)}
		s.IPPrefixCount = aws.Int32(1)
		s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
	})
	launched, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	// The fleet's launch template carries the fields.
	ec2c := awstest.Clients(e.emu).EC2
	lts, err := ec2c.DescribeLaunchTemplates(e.ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lt := range lts.LaunchTemplates {
		if strings.HasPrefix(aws.ToString(lt.LaunchTemplateName), "dovetail/") {
			names = append(names, aws.ToString(lt.LaunchTemplateName))
		}
	}
	if len(names) != 1 {
		t.Fatalf("dovetail's launch templates: %v, want one", names)
	}
	out, err := ec2c.DescribeLaunchTemplateVersions(e.ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateName: aws.String(names[0]), Versions: []string{"$Latest"}})
	if err != nil || len(out.LaunchTemplateVersions) != 1 {
		t.Fatalf("launch template %q: %v, %v", names[0], out, err)
	}
	d := out.LaunchTemplateVersions[0].LaunchTemplateData
	if d.CpuOptions == nil || d.CpuOptions.NestedVirtualization != "disabled" || d.EnclaveOptions == nil || aws.ToBool(d.EnclaveOptions.Enabled) ||
		len(d.NetworkInterfaces) != 1 || aws.ToInt32(d.NetworkInterfaces[0].Ipv4PrefixCount) != 1 || aws.ToString(d.NetworkInterfaces[0].InterfaceType) != "interface" ||
		d.NetworkInterfaces[0].ConnectionTrackingSpecification == nil || aws.ToInt32(d.NetworkInterfaces[0].ConnectionTrackingSpecification.UdpTimeout) != 30 {
		t.Errorf("launch template data %+v", d)
	}
	check := func(what string, want cloudprovider.DriftReason) {
		t.Helper()
		if got, err := e.p.IsDrifted(e.ctx, launched); err != nil || got != want {
			t.Errorf("%s: IsDrifted = %q, %v; want %q", what, got, err, want)
		}
	}
	check("as launched", "")
	var kubelet awsv1.KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"cpuManagerPolicy": "static"}`), &kubelet); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field  string
		mutate func(*awsv1.EC2NodeClassSpec)
		want   cloudprovider.DriftReason
	}{
		{"cpuOptions", func(s *awsv1.EC2NodeClassSpec) { s.CPUOptions.NestedVirtualization = "enabled" }, cloudprovider.DriftNodeClass},
		{"enclaveOptions", func(s *awsv1.EC2NodeClassSpec) { s.EnclaveOptions.Enabled = aws.Bool(true) }, cloudprovider.DriftNodeClass},
		{"connectionTracking", func(s *awsv1.EC2NodeClassSpec) { s.ConnectionTracking.UDPTimeout = aws.Int32(60) }, cloudprovider.DriftNodeClass},
		{"networkInterfaces", func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = append(s.NetworkInterfaces, awsv1.NetworkInterface{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly})
		}, cloudprovider.DriftNodeClass},
		{"volumeInitializationRate", func(s *awsv1.EC2NodeClassSpec) {
			s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: aws.String("snap-0123456789abcdef0"), VolumeInitializationRate: aws.Int32(200)}}}
		}, cloudprovider.DriftNodeClass},
		{"kubelet free-form key", func(s *awsv1.EC2NodeClassSpec) { s.Kubelet = kubelet.DeepCopy() }, cloudprovider.DriftNodeClass},
		{"placementGroupSelector", func(s *awsv1.EC2NodeClassSpec) { s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "pg"} }, cloudprovider.DriftNodeClass},
		{"ipPrefixCount (outside the peer's hash)", func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = aws.Int32(3) }, ""},
	} {
		before := e.class.Spec.DeepCopy()
		e.class = e.updateSpec(e.class, tc.mutate)
		check(tc.field, tc.want)
		e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) { *s = *before })
		check(tc.field+" restored", "")
	}
}

// TestLaunchNarrowedTypes: a class with Nitro Enclaves enabled, connection
// tracking and an efa-only interface launches only a type the built-in
// catalog (which the emulator serves) says takes all three, where the
// same request from the plain class launches one that does not.
func TestLaunchNarrowedTypes(t *testing.T) {
	e := newEnv(t, envOptions{})
	cat := catalog.Builtin()
	typeOf := func(claim *karpv1.NodeClaim) *catalog.Type {
		t.Helper()
		name := claim.Labels[corev1.LabelInstanceTypeStable]
		ct, ok := cat.Type(name)
		if !ok {
			t.Fatalf("launched type %q is not in the catalog", name)
		}
		return ct
	}
	takes := func(ct *catalog.Type) bool {
		return ct.NitroEnclaves && ct.Hypervisor == "nitro" && ct.EFA && ct.EFAInterfaces >= 1 && len(ct.NetworkCardList) > 0 && ct.NetworkCardList[0].MaxENIs >= 2
	}
	plain, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	if ct := typeOf(plain); takes(ct) {
		t.Fatalf("test setup: the plain class launched %s, which already takes the fields", ct.Name)
	}
	e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) {
		s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: aws.Bool(true)}
		s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(3600)}
		s.NetworkInterfaces = []awsv1.NetworkInterface{
			{InterfaceType: awsv1.InterfaceTypeInterface},
			{DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		}
	})
	narrowed, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	if ct := typeOf(narrowed); !takes(ct) {
		t.Errorf("launched %s: enclaves %t, hypervisor %q, EFA %t (%d interfaces), cards %+v",
			ct.Name, ct.NitroEnclaves, ct.Hypervisor, ct.EFA, ct.EFAInterfaces, ct.NetworkCardList)
	}
}

// TestLaunchIntoPlacementGroup: a class selecting a placement group by
// name launches into it (DescribeInstances' Placement names the group;
// a partition group gives the instance a partition), and one selecting
// by id does too (the launch template's Placement carries the selector).
func TestLaunchIntoPlacementGroup(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.testCalls = map[string]bool{"ec2:CreatePlacementGroup": true, "ec2:DescribeInstances": true}
	ec2c := awstest.Clients(e.emu).EC2
	created, err := ec2c.CreatePlacementGroup(e.ctx, &ec2.CreatePlacementGroupInput{
		GroupName: aws.String("kafka"), Strategy: "partition", PartitionCount: aws.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(created.PlacementGroup.GroupId)
	for _, sel := range []awsv1.PlacementGroupSelector{{Name: "kafka"}, {ID: id}} {
		e.class = e.updateSpec(e.class, func(s *awsv1.EC2NodeClassSpec) { s.PlacementGroupSelector = &sel })
		launched, err := e.p.Create(e.ctx, e.claim(in(karpv1.LabelArch, "amd64")))
		if err != nil {
			t.Fatalf("%+v: %v", sel, err)
		}
		instanceID := launched.Status.ProviderID[strings.LastIndex(launched.Status.ProviderID, "/")+1:]
		out, err := ec2c.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instanceID}})
		if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
			t.Fatalf("%+v: DescribeInstances %s: %v %v", sel, instanceID, out, err)
		}
		p := out.Reservations[0].Instances[0].Placement
		if p == nil || aws.ToString(p.GroupName) != "kafka" || aws.ToString(p.GroupId) != id || aws.ToInt32(p.PartitionNumber) < 1 || aws.ToInt32(p.PartitionNumber) > 3 {
			t.Errorf("%+v: instance placement %+v, want group kafka (%s) with a partition", sel, p, id)
		}
	}
}
