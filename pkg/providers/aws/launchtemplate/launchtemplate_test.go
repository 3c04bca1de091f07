package launchtemplate_test

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"strings"
	"sync"
	"testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
)

var (
	imageID = "ami-0123456789abcdef0"
	groups  = []string{"sg-2", "sg-1"}
)

func content() launchtemplate.Content {
	return launchtemplate.Content{
		ImageID: imageID, UserData: "#!/bin/sh\n", SecurityGroupIDs: append([]string(nil), groups...),
		HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 1, HTTPTokens: "required",
		BlockDevices: launchtemplate.DefaultBlockDevices(awsv1.AMIFamilyAL2023),
		Tags:         map[string]string{"karpenter.sh/nodepool": "default"},
	}
}

func TestHashAndName(t *testing.T) {
	base := content()
	tests := []struct {
		name    string
		mutate  func(*launchtemplate.Content)
		changed bool
	}{
		{"identical", func(*launchtemplate.Content) {}, false},
		{"security group order", func(c *launchtemplate.Content) { c.SecurityGroupIDs = []string{groups[1], groups[0]} }, false},
		{"image", func(c *launchtemplate.Content) { c.ImageID = "ami-0fedcba987654321f" }, true},
		{"user data", func(c *launchtemplate.Content) { c.UserData += "echo\n" }, true},
		{"hop limit", func(c *launchtemplate.Content) { c.HTTPPutResponseHopLimit = 2 }, true},
		{"tokens", func(c *launchtemplate.Content) { c.HTTPTokens = "optional" }, true},
		{"tags", func(c *launchtemplate.Content) { c.Tags = map[string]string{"karpenter.sh/nodepool": "other"} }, true},
		{"volume", func(c *launchtemplate.Content) {
			c.BlockDevices = launchtemplate.DefaultBlockDevices(awsv1.AMIFamilyBottlerocket)
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := content()
			c.SecurityGroupIDs = append([]string(nil), c.SecurityGroupIDs...)
			tc.mutate(&c)
			if got := c.Hash() != base.Hash(); got != tc.changed {
				t.Errorf("hash changed = %v, want %v", got, tc.changed)
			}
		})
	}
	name := base.Name(strings.Repeat("x", 120))
	if len(name) > 128 || !strings.HasPrefix(name, "dovetail/") {
		t.Errorf("name %q (%d chars) is not a valid template name", name, len(name))
	}
}

func TestEnsureReusesAndCreates(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{})
	ctx := context.Background()
	c := awstest.Clients(e)
	sgs, err := c.EC2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil || len(sgs.SecurityGroups) < 2 {
		t.Fatalf("DescribeSecurityGroups = %v, %v", sgs, err)
	}
	groups = []string{aws.ToString(sgs.SecurityGroups[1].GroupId), aws.ToString(sgs.SecurityGroups[0].GroupId)}
	for name, v := range e.SSMParameters() {
		if strings.HasSuffix(name, "/amazon-linux-2023/x86_64/standard/recommended/image_id") {
			imageID = v
		}
	}
	p := launchtemplate.NewProvider(c.EC2, awstest.ClusterName)
	countCreates := func() int {
		n := 0
		for _, call := range e.Calls() {
			if call.Action == "ec2:CreateLaunchTemplate" && call.ErrorCode == "" {
				n++
			}
		}
		return n
	}
	// Ten concurrent callers with identical content make one template.
	var wg sync.WaitGroup
	ids := make([]string, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tpl, err := p.Ensure(ctx, content())
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = tpl.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("template ids %v differ", ids)
		}
	}
	if n := countCreates(); n != 1 {
		t.Errorf("%d CreateLaunchTemplate calls for identical content, want 1", n)
	}
	// A fresh provider (a restarted controller) finds the existing
	// template by name instead of creating another.
	p2 := launchtemplate.NewProvider(c.EC2, awstest.ClusterName)
	again, err := p2.Ensure(ctx, content())
	if err != nil || again.ID != ids[0] {
		t.Fatalf("restarted Ensure = %+v, %v; want %s", again, err, ids[0])
	}
	if n := countCreates(); n != 1 {
		t.Errorf("restart created another template (%d creates)", n)
	}
	// Changed content: a new template.
	changed := content()
	changed.HTTPPutResponseHopLimit = 2
	other, err := p.Ensure(ctx, changed)
	if err != nil || other.ID == ids[0] {
		t.Fatalf("changed content gave %+v, %v; want a new template", other, err)
	}
	if n := countCreates(); n != 2 {
		t.Errorf("%d creates after a change, want 2", n)
	}
}
