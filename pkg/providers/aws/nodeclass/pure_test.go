package nodeclass

import (
	"encoding/json"
	"testing"
	"time"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

func TestNewest(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		images []Image
		want   []string
	}{
		{name: "none", want: nil},
		{name: "newest per arch", images: []Image{
			{ID: "ami-1", Arch: "amd64", Created: t0},
			{ID: "ami-2", Arch: "amd64", Created: t0.Add(time.Hour)},
			{ID: "ami-3", Arch: "arm64", Created: t0.Add(2 * time.Hour)},
			{ID: "ami-4", Arch: "arm64", Created: t0},
		}, want: []string{"ami-2", "ami-3"}},
		{name: "tie broken by name then id", images: []Image{
			{ID: "ami-9", Name: "a", Arch: "amd64", Created: t0},
			{ID: "ami-1", Name: "b", Arch: "amd64", Created: t0},
			{ID: "ami-5", Name: "b", Arch: "arm64", Created: t0},
			{ID: "ami-6", Name: "b", Arch: "arm64", Created: t0},
		}, want: []string{"ami-1", "ami-6"}},
		{name: "other architectures ignored", images: []Image{{ID: "ami-1", Arch: "i386", Created: t0}}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Newest(tc.images)
			var ids []string
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			if len(ids) != len(tc.want) {
				t.Fatalf("Newest = %v, want %v", ids, tc.want)
			}
			for i := range ids {
				if ids[i] != tc.want[i] {
					t.Fatalf("Newest = %v, want %v", ids, tc.want)
				}
			}
		})
	}
}

func TestHash(t *testing.T) {
	base := func() *awsv1.EC2NodeClass {
		return &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             "r", Tags: map[string]string{"a": "1", "b": "2"},
		}}
	}
	h := Hash(base())
	tests := []struct {
		name    string
		mutate  func(*awsv1.EC2NodeClass)
		changed bool
	}{
		{"nothing", func(*awsv1.EC2NodeClass) {}, false},
		{"subnet selector (not hashed)", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}}
		}, false},
		{"explicit default metadata options", func(nc *awsv1.EC2NodeClass) {
			v, hop := "required", int64(1)
			nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPTokens: &v, HTTPPutResponseHopLimit: &hop}
		}, false},
		{"tags", func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags["c"] = "3" }, true},
		{"user data", func(nc *awsv1.EC2NodeClass) { s := "#!/bin/sh"; nc.Spec.UserData = &s }, true},
		{"hop limit", func(nc *awsv1.EC2NodeClass) {
			hop := int64(2)
			nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPPutResponseHopLimit: &hop}
		}, true},
		{"family", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
		}, true},
		// The fields acted on since issue 33 drift nodes as the peer's
		// static hash does; ipPrefixCount is outside the peer's hash.
		{"cpuOptions", func(nc *awsv1.EC2NodeClass) { nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: "enabled"} }, true},
		{"enclaveOptions", func(nc *awsv1.EC2NodeClass) { nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: ref(true)} }, true},
		{"connectionTracking", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ref(int32(30))}
		}, true},
		{"networkInterfaces", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
		}, true},
		{"placementGroupSelector", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "pg"}
		}, true},
		{"volumeInitializationRate", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ref("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: ref("snap-1"), VolumeInitializationRate: ref(int32(100))}}}
		}, true},
		{"kubelet free-form key", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = kubelet(`{"cpuManagerPolicy": "static"}`)
		}, true},
		{"ipPrefixCount (not hashed, as the peer)", func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = ref(int32(2)) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := base()
			tc.mutate(nc)
			if got := Hash(nc) != h; got != tc.changed {
				t.Errorf("hash changed = %v, want %v", got, tc.changed)
			}
		})
	}
	// A class without the fields acted on since issue 33 keeps the hash it
	// had before (no drift on upgrade).
	if h != "c5d3602ef68ce146" {
		t.Errorf("hash of the base class = %s, changed since the previous scheme", h)
	}
}

// TestHashKubeletValues: a free-form kubelet key's value drifts nodes,
// its formatting and the order of network interfaces do not.
func TestHashKubeletValues(t *testing.T) {
	withKubelet := func(k *awsv1.KubeletConfiguration, nis ...awsv1.NetworkInterface) string {
		return Hash(&awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Kubelet: k, NetworkInterfaces: nis}})
	}
	a := withKubelet(kubelet(`{"cpuManagerPolicy": "static", "featureGates": {"A": true}}`))
	if b := withKubelet(kubelet(`{"featureGates":{"A":true},"cpuManagerPolicy":"static"}`)); a != b {
		t.Error("reformatting the kubelet keys changed the hash")
	}
	if b := withKubelet(kubelet(`{"cpuManagerPolicy": "none", "featureGates": {"A": true}}`)); a == b {
		t.Error("a changed free-form kubelet value kept the hash")
	}
	p, e := awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface}, awsv1.NetworkInterface{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}
	if withKubelet(nil, p, e) != withKubelet(nil, e, p) {
		t.Error("reordering networkInterfaces changed the hash")
	}
}

func kubelet(s string) *awsv1.KubeletConfiguration {
	var k awsv1.KubeletConfiguration
	if err := json.Unmarshal([]byte(s), &k); err != nil {
		panic(err)
	}
	return &k
}

func TestInstanceProfileName(t *testing.T) {
	long := make([]byte, 150)
	for i := range long {
		long[i] = 'c'
	}
	n := InstanceProfileName(string(long), "us-east-1", "default")
	if len(n) > 128 {
		t.Errorf("name of %d characters exceeds IAM's 128", len(n))
	}
	if InstanceProfileName("a", "us-east-1", "x") == InstanceProfileName("a", "us-east-1", "y") {
		t.Error("different classes share a profile name")
	}
	if InstanceProfileName("a", "us-east-1", "x") != InstanceProfileName("a", "us-east-1", "x") {
		t.Error("name is not deterministic")
	}
}
func ref[T any](v T) *T { return &v }
