package launchtemplate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
)

// fieldsEnv is an emulator with two of its security groups and an image.
type fieldsEnv struct {
	ec2    *ec2.Client
	p      *launchtemplate.Provider
	groups []string
	image  string
}

func startFields(t *testing.T) fieldsEnv {
	t.Helper()
	e, _ := awstest.Start(t, awsemu.Options{})
	c := awstest.Clients(e)
	sgs, err := c.EC2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{})
	if err != nil || len(sgs.SecurityGroups) < 2 {
		t.Fatalf("DescribeSecurityGroups = %v, %v", sgs, err)
	}
	env := fieldsEnv{ec2: c.EC2, p: launchtemplate.NewProvider(c.EC2, awstest.ClusterName)}
	env.groups = []string{aws.ToString(sgs.SecurityGroups[0].GroupId), aws.ToString(sgs.SecurityGroups[1].GroupId)}
	for name, v := range e.SSMParameters() {
		if strings.HasSuffix(name, "/amazon-linux-2023/x86_64/standard/recommended/image_id") {
			env.image = v
		}
	}
	return env
}

// content is a class's template content as Create builds it.
func (env fieldsEnv) content(nc *awsv1.EC2NodeClass) launchtemplate.Content {
	c := launchtemplate.Content{
		ImageID: env.image, UserData: "#!/bin/sh\n", SecurityGroupIDs: env.groups,
		HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 1, HTTPTokens: "required",
		BlockDevices: launchtemplate.BlockDevices(nc), AssociatePublicIP: nc.Spec.AssociatePublicIPAddress,
	}
	c.ApplyNodeClass(nc)
	return c
}

// stored creates the class's template and returns what EC2 stored, as
// DescribeLaunchTemplateVersions answers.
func (env fieldsEnv) stored(t *testing.T, nc *awsv1.EC2NodeClass) *ec2types.ResponseLaunchTemplateData {
	t.Helper()
	ctx := context.Background()
	tpl, err := env.p.Ensure(ctx, env.content(nc))
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	out, err := env.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(tpl.ID), Versions: []string{"$Latest"}})
	if err != nil || len(out.LaunchTemplateVersions) != 1 {
		t.Fatalf("DescribeLaunchTemplateVersions = %v, %v", out, err)
	}
	return out.LaunchTemplateVersions[0].LaunchTemplateData
}

func class(mutate func(*awsv1.EC2NodeClassSpec)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMIFamily: aws.String(awsv1.AMIFamilyAL2023)}}
	mutate(&nc.Spec)
	return nc
}

func sameGroups(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, g := range want {
		found := false
		for _, h := range got {
			found = found || g == h
		}
		if !found {
			return false
		}
	}
	return true
}

// TestTemplateCPUOptions: spec.cpuOptions.nestedVirtualization is the
// template's CpuOptions.NestedVirtualization; without it the template has
// no CpuOptions.
func TestTemplateCPUOptions(t *testing.T) {
	env := startFields(t)
	for _, v := range []string{"enabled", "disabled"} {
		d := env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) { s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: v} }))
		if d.CpuOptions == nil || string(d.CpuOptions.NestedVirtualization) != v {
			t.Errorf("nestedVirtualization %s: stored CpuOptions %+v", v, d.CpuOptions)
		}
		if d.CpuOptions != nil && (d.CpuOptions.CoreCount != nil || d.CpuOptions.ThreadsPerCore != nil) {
			t.Errorf("nestedVirtualization %s: stored core count/threads %+v", v, d.CpuOptions)
		}
	}
	if d := env.stored(t, class(func(*awsv1.EC2NodeClassSpec) {})); d.CpuOptions != nil {
		t.Errorf("no cpuOptions: stored CpuOptions %+v", d.CpuOptions)
	}
}

// TestTemplateEnclaveOptions: spec.enclaveOptions.enabled is the template's
// EnclaveOptions.Enabled.
func TestTemplateEnclaveOptions(t *testing.T) {
	env := startFields(t)
	for _, v := range []bool{true, false} {
		d := env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) { s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: aws.Bool(v)} }))
		if d.EnclaveOptions == nil || aws.ToBool(d.EnclaveOptions.Enabled) != v {
			t.Errorf("enabled %v: stored EnclaveOptions %+v", v, d.EnclaveOptions)
		}
	}
	if d := env.stored(t, class(func(*awsv1.EC2NodeClassSpec) {})); d.EnclaveOptions != nil && aws.ToBool(d.EnclaveOptions.Enabled) {
		t.Errorf("no enclaveOptions: stored %+v", d.EnclaveOptions)
	}
}

// TestTemplateVolumeInitializationRate: the rate is on the mapping's EBS
// volume, with its snapshot; EC2 refuses a rate out of 100..300.
func TestTemplateVolumeInitializationRate(t *testing.T) {
	env := startFields(t)
	size := resource.MustParse("40Gi")
	d := env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) {
		s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
			{DeviceName: aws.String("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: &size, VolumeType: aws.String("gp3")}},
			{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: aws.String("snap-0123456789abcdef0"), VolumeInitializationRate: aws.Int32(250)}},
		}
	}))
	if len(d.BlockDeviceMappings) != 2 {
		t.Fatalf("stored mappings %+v", d.BlockDeviceMappings)
	}
	root, data := d.BlockDeviceMappings[0], d.BlockDeviceMappings[1]
	if root.Ebs == nil || root.Ebs.VolumeInitializationRate != nil || aws.ToInt32(root.Ebs.VolumeSize) != 40 {
		t.Errorf("root volume stored as %+v", root.Ebs)
	}
	if aws.ToString(data.DeviceName) != "/dev/xvdb" || data.Ebs == nil || aws.ToInt32(data.Ebs.VolumeInitializationRate) != 250 || aws.ToString(data.Ebs.SnapshotId) != "snap-0123456789abcdef0" {
		t.Errorf("snapshot volume stored as %s %+v", aws.ToString(data.DeviceName), data.Ebs)
	}
	// EC2's bounds hold in the emulator too.
	bad := env.content(class(func(s *awsv1.EC2NodeClassSpec) {
		s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: aws.String("snap-0123456789abcdef0"), VolumeInitializationRate: aws.Int32(50)}}}
	}))
	if _, err := env.p.Ensure(context.Background(), bad); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("rate 50: Ensure error %v, want InvalidParameterValue", err)
	}
}

// TestTemplateConnectionTrackingAndPrefixes: without networkInterfaces,
// connectionTracking and ipPrefixCount go on one primary interface
// (device 0) that carries the class's security groups, and the template
// has no top-level security groups.
func TestTemplateConnectionTrackingAndPrefixes(t *testing.T) {
	env := startFields(t)
	d := env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) {
		s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(3600), UDPStreamTimeout: aws.Int32(120), UDPTimeout: aws.Int32(45)}
		s.IPPrefixCount = aws.Int32(2)
	}))
	if len(d.NetworkInterfaces) != 1 || len(d.SecurityGroupIds) != 0 {
		t.Fatalf("stored interfaces %+v, top-level groups %v", d.NetworkInterfaces, d.SecurityGroupIds)
	}
	ni := d.NetworkInterfaces[0]
	if aws.ToInt32(ni.DeviceIndex) != 0 || aws.ToInt32(ni.Ipv4PrefixCount) != 2 || !sameGroups(ni.Groups, env.groups) || ni.AssociatePublicIpAddress != nil {
		t.Errorf("primary interface %+v", ni)
	}
	ct := ni.ConnectionTrackingSpecification
	if ct == nil || aws.ToInt32(ct.TcpEstablishedTimeout) != 3600 || aws.ToInt32(ct.UdpStreamTimeout) != 120 || aws.ToInt32(ct.UdpTimeout) != 45 {
		t.Errorf("connection tracking %+v", ct)
	}
	// Only one timeout set: the others stay EC2's defaults (absent).
	d = env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) {
		s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: aws.Int32(30)}
	}))
	if len(d.NetworkInterfaces) != 1 {
		t.Fatalf("stored interfaces %+v", d.NetworkInterfaces)
	}
	ct = d.NetworkInterfaces[0].ConnectionTrackingSpecification
	if ct == nil || aws.ToInt32(ct.UdpTimeout) != 30 || ct.TcpEstablishedTimeout != nil || ct.UdpStreamTimeout != nil || d.NetworkInterfaces[0].Ipv4PrefixCount != nil {
		t.Errorf("udpTimeout only: interface %+v, tracking %+v", d.NetworkInterfaces[0], ct)
	}
	// ipPrefixCount 0 is sent (no prefixes), not dropped.
	d = env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = aws.Int32(0) }))
	if len(d.NetworkInterfaces) != 1 || d.NetworkInterfaces[0].Ipv4PrefixCount == nil || *d.NetworkInterfaces[0].Ipv4PrefixCount != 0 {
		t.Errorf("ipPrefixCount 0: interfaces %+v", d.NetworkInterfaces)
	}
	// Nothing set: top-level groups and no interface, as before.
	d = env.stored(t, class(func(*awsv1.EC2NodeClassSpec) {}))
	if len(d.NetworkInterfaces) != 0 || !sameGroups(d.SecurityGroupIds, env.groups) {
		t.Errorf("plain class: interfaces %+v, groups %v", d.NetworkInterfaces, d.SecurityGroupIds)
	}
}

// TestTemplateNetworkInterfaces: each spec.networkInterfaces entry is an
// interface on its card and device with the class's security groups; the
// public-IP setting, prefix count and connection tracking go only on the
// interfaces that are not efa-only.
func TestTemplateNetworkInterfaces(t *testing.T) {
	env := startFields(t)
	d := env.stored(t, class(func(s *awsv1.EC2NodeClassSpec) {
		s.NetworkInterfaces = []awsv1.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
			{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
			{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		}
		s.AssociatePublicIPAddress = aws.Bool(true)
		s.IPPrefixCount = aws.Int32(1)
		s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(600)}
	}))
	if len(d.NetworkInterfaces) != 3 || len(d.SecurityGroupIds) != 0 {
		t.Fatalf("stored interfaces %+v, top-level groups %v", d.NetworkInterfaces, d.SecurityGroupIds)
	}
	want := []struct {
		card, device int32
		typ          string
	}{{0, 0, "interface"}, {0, 1, "efa-only"}, {1, 0, "efa-only"}}
	for i, w := range want {
		ni := d.NetworkInterfaces[i]
		if aws.ToInt32(ni.NetworkCardIndex) != w.card || aws.ToInt32(ni.DeviceIndex) != w.device || aws.ToString(ni.InterfaceType) != w.typ || !sameGroups(ni.Groups, env.groups) {
			t.Errorf("interface %d stored as card %d device %d type %q groups %v; want %+v", i, aws.ToInt32(ni.NetworkCardIndex), aws.ToInt32(ni.DeviceIndex), aws.ToString(ni.InterfaceType), ni.Groups, w)
		}
		efa := w.typ == "efa-only"
		if efa != (ni.AssociatePublicIpAddress == nil) || efa != (ni.Ipv4PrefixCount == nil) || efa != (ni.ConnectionTrackingSpecification == nil) {
			t.Errorf("interface %d (%s): public IP %v, prefixes %v, tracking %+v", i, w.typ, ni.AssociatePublicIpAddress, ni.Ipv4PrefixCount, ni.ConnectionTrackingSpecification)
		}
	}
	primary := d.NetworkInterfaces[0]
	if !aws.ToBool(primary.AssociatePublicIpAddress) || aws.ToInt32(primary.Ipv4PrefixCount) != 1 || aws.ToInt32(primary.ConnectionTrackingSpecification.TcpEstablishedTimeout) != 600 {
		t.Errorf("primary interface %+v", primary)
	}
	// EC2 refuses a public IP with two interfaces that carry addresses.
	bad := env.content(class(func(s *awsv1.EC2NodeClassSpec) {
		s.NetworkInterfaces = []awsv1.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
			{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		}
		s.AssociatePublicIPAddress = aws.Bool(true)
	}))
	if _, err := env.p.Ensure(context.Background(), bad); apiCode(err) != "InvalidParameterCombination" {
		t.Errorf("public IP on two interfaces: Ensure error %v, want InvalidParameterCombination", err)
	}
}

// TestHashCoversClassFields: every class field the template carries
// changes the template's name, so a changed class never reuses an old
// template.
func TestHashCoversClassFields(t *testing.T) {
	env := fieldsEnv{groups: []string{"sg-1"}, image: "ami-0123456789abcdef0"}
	base := env.content(class(func(*awsv1.EC2NodeClassSpec) {})).Hash()
	for name, m := range map[string]func(*awsv1.EC2NodeClassSpec){
		"cpuOptions":     func(s *awsv1.EC2NodeClassSpec) { s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: "enabled"} },
		"enclaveOptions": func(s *awsv1.EC2NodeClassSpec) { s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: aws.Bool(true)} },
		"connectionTracking": func(s *awsv1.EC2NodeClassSpec) {
			s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: aws.Int32(30)}
		},
		"ipPrefixCount": func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = aws.Int32(1) },
		"networkInterfaces": func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
		},
		"volumeInitializationRate": func(s *awsv1.EC2NodeClassSpec) {
			s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: aws.String("snap-1"), VolumeInitializationRate: aws.Int32(100)}}}
		},
	} {
		if h := env.content(class(m)).Hash(); h == base {
			t.Errorf("%s: template hash unchanged", name)
		}
	}
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
