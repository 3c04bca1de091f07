package nodeclass

import (
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
