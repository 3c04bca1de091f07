package nodeclass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// Reasons of ValidationSucceeded=False when a dry-run launch call is
// refused as unauthorized (the peer's names).
const (
	ReasonCreateFleetAuthCheckFailed          = "CreateFleetAuthCheckFailed"
	ReasonCreateLaunchTemplateAuthCheckFailed = "CreateLaunchTemplateAuthCheckFailed"
	ReasonRunInstancesAuthCheckFailed         = "RunInstancesAuthCheckFailed"
)

// Default lifetimes of a dry-run result: a pass is trusted for
// DefaultDryRunTTL, a failure is checked again after
// DefaultDryRunFailureTTL (so a fixed policy shows soon).
const (
	DefaultDryRunTTL        = 30 * time.Minute
	DefaultDryRunFailureTTL = time.Minute
)

// DryRunTemplateName is the launch template name the dry-run CreateFleet
// refers to; EC2 answers the authorization check before it looks the
// template up, and a dry run creates nothing.
const DryRunTemplateName = "dovetail-dry-run"

// dryRunNodePool is the karpenter.sh/nodepool tag value the dry-run calls
// carry: the controller's IAM policy requires the tag on launches.
const dryRunNodePool = "dry-run"

// dryRunResult is one cached validation: reason "" is a pass.
type dryRunResult struct {
	reason, message string
	expires         time.Time
}

// dryRunCache holds results by key (dryRunKey).
type dryRunCache struct {
	mu      sync.Mutex
	results map[string]dryRunResult
}

// dryRunInputs are what the dry-run calls are built from: the class's
// resolved launch parameters.
type dryRunInputs struct {
	subnet, ami, arch, profile string
	securityGroups             []string
	tags                       map[string]string
}

// dryRunValidate checks with DryRun=true CreateLaunchTemplate, CreateFleet
// and RunInstances calls that the controller may launch with the class's
// resolved parameters. It returns reason "" when EC2 answers every call
// with DryRunOperation, a ...AuthCheckFailed reason and a message when one
// is refused as unauthorized, and an error for any other answer. Results
// are cached per class name, spec hash and resolved inputs.
func (r *Resolver) dryRunValidate(ctx context.Context, nc, out *awsv1.EC2NodeClass, now time.Time) (reason, message string, err error) {
	in := r.dryRunInputs(nc, out)
	key := dryRunKey(nc, in)
	r.dryRuns.mu.Lock()
	if res, ok := r.dryRuns.results[key]; ok && now.Before(res.expires) {
		r.dryRuns.mu.Unlock()
		return res.reason, res.message, nil
	}
	r.dryRuns.mu.Unlock()

	reason, message, err = r.dryRunCalls(ctx, in)
	if err != nil {
		return "", "", err
	}
	ttl := r.DryRunTTL
	if ttl <= 0 {
		ttl = DefaultDryRunTTL
	}
	if reason != "" {
		ttl = min(ttl, DefaultDryRunFailureTTL)
	}
	r.dryRuns.mu.Lock()
	defer r.dryRuns.mu.Unlock()
	if r.dryRuns.results == nil {
		r.dryRuns.results = map[string]dryRunResult{}
	}
	for k, res := range r.dryRuns.results {
		if !now.Before(res.expires) {
			delete(r.dryRuns.results, k)
		}
	}
	r.dryRuns.results[key] = dryRunResult{reason: reason, message: message, expires: now.Add(ttl)}
	return reason, message, nil
}

func (r *Resolver) dryRunInputs(nc, out *awsv1.EC2NodeClass) dryRunInputs {
	in := dryRunInputs{profile: out.Status.InstanceProfile, tags: map[string]string{}}
	if len(out.Status.Subnets) > 0 {
		in.subnet = out.Status.Subnets[0].ID
	}
	for _, sg := range out.Status.SecurityGroups {
		in.securityGroups = append(in.securityGroups, sg.ID)
	}
	if len(out.Status.AMIs) > 0 {
		in.ami = out.Status.AMIs[0].ID
		in.arch = karpv1.ArchitectureAmd64
		for _, req := range out.Status.AMIs[0].Requirements {
			if req.Key == corev1.LabelArchStable && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) > 0 {
				in.arch = req.Values[0]
			}
		}
	}
	maps.Copy(in.tags, nc.Spec.Tags)
	in.tags[TagClusterPrefix+r.ClusterName] = "owned"
	in.tags[awsv1.TagEKSClusterName] = r.ClusterName
	in.tags[karpv1.NodePoolLabelKey] = dryRunNodePool
	in.tags[awsv1.TagNodeClass] = nc.Name
	return in
}

func dryRunKey(nc *awsv1.EC2NodeClass, in dryRunInputs) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", nc.Name, Hash(nc), in.subnet, in.ami, in.arch, in.profile, strings.Join(in.securityGroups, ","))
	for _, k := range slices.Sorted(maps.Keys(in.tags)) {
		fmt.Fprintf(h, "%s=%s\x00", k, in.tags[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// dryRunInstanceType is a common type of the image's architecture.
func dryRunInstanceType(arch string) ec2types.InstanceType {
	if arch == karpv1.ArchitectureArm64 {
		return ec2types.InstanceTypeM6gLarge
	}
	return ec2types.InstanceTypeM5Large
}

func (r *Resolver) dryRunCalls(ctx context.Context, in dryRunInputs) (reason, message string, err error) {
	tagSpec := func(rt ec2types.ResourceType) ec2types.TagSpecification {
		ts := ec2types.TagSpecification{ResourceType: rt}
		for _, k := range slices.Sorted(maps.Keys(in.tags)) {
			ts.Tags = append(ts.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(in.tags[k])})
		}
		return ts
	}
	itype := dryRunInstanceType(in.arch)
	calls := []struct {
		op, reason string
		call       func() error
	}{
		{"CreateLaunchTemplate", ReasonCreateLaunchTemplateAuthCheckFailed, func() error {
			_, err := r.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
				DryRun:             aws.Bool(true),
				LaunchTemplateName: aws.String(DryRunTemplateName),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
					ImageId:            aws.String(in.ami),
					SecurityGroupIds:   in.securityGroups,
					IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(in.profile)},
				},
				TagSpecifications: []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeLaunchTemplate)},
			})
			return err
		}},
		{"CreateFleet", ReasonCreateFleetAuthCheckFailed, func() error {
			_, err := r.EC2.CreateFleet(ctx, &ec2.CreateFleetInput{
				DryRun: aws.Bool(true),
				Type:   ec2types.FleetTypeInstant,
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
						LaunchTemplateName: aws.String(DryRunTemplateName), Version: aws.String("$Latest"),
					},
					Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: itype, SubnetId: aws.String(in.subnet)}},
				}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
					TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
				},
				TagSpecifications: []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeFleet), tagSpec(ec2types.ResourceTypeInstance)},
			})
			return err
		}},
		{"RunInstances", ReasonRunInstancesAuthCheckFailed, func() error {
			_, err := r.EC2.RunInstances(ctx, &ec2.RunInstancesInput{
				DryRun:             aws.Bool(true),
				MinCount:           aws.Int32(1),
				MaxCount:           aws.Int32(1),
				ImageId:            aws.String(in.ami),
				InstanceType:       itype,
				SubnetId:           aws.String(in.subnet),
				SecurityGroupIds:   in.securityGroups,
				IamInstanceProfile: &ec2types.IamInstanceProfileSpecification{Name: aws.String(in.profile)},
				TagSpecifications:  []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeInstance), tagSpec(ec2types.ResourceTypeVolume)},
			})
			return err
		}},
	}
	for _, c := range calls {
		err := c.call()
		var ae smithy.APIError
		switch {
		case err == nil:
			// EC2 always answers a dry run with an error; none is a pass.
		case errors.As(err, &ae) && ae.ErrorCode() == "DryRunOperation":
		case errors.As(err, &ae) && ae.ErrorCode() == "UnauthorizedOperation":
			return c.reason, fmt.Sprintf("dry-run ec2:%s with the class's resolved parameters was refused: %s", c.op, ae.ErrorMessage()), nil
		default:
			return "", "", fmt.Errorf("dry-run ec2:%s: %w", c.op, err)
		}
	}
	return "", "", nil
}
