package aws

import (
	"context"
	"fmt"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/repair"
)

// RepairPolicies returns the AWS repair policies (package repair), the
// reboot-clearable ones rebooting under Options.RebootForRepair.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return repair.Policies(p.o.RebootForRepair)
}

// Reboot reboots the NodeClaim's instance in place (ec2:RebootInstances,
// in the IAM policy only with RebootForRepair). An instance that is gone,
// or not the cluster's, is NodeClaimNotFoundError.
func (p *Provider) Reboot(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	pid := nodeClaim.Status.ProviderID
	id, err := ParseProviderID(pid)
	if err != nil {
		return err
	}
	in, err := p.instances.Get(ctx, id)
	if err != nil {
		if instance.IsNotFound(err) {
			return &cloudprovider.NodeClaimNotFoundError{ProviderID: pid, Err: err}
		}
		return err
	}
	if !p.owned(in) || in.State == "terminated" || in.State == "shutting-down" {
		return &cloudprovider.NodeClaimNotFoundError{ProviderID: pid, Err: fmt.Errorf("instance %s is %s or not this cluster's", in.ID, in.State)}
	}
	if err := p.instances.Reboot(ctx, in.ID); err != nil {
		if instance.IsNotFound(err) {
			return &cloudprovider.NodeClaimNotFoundError{ProviderID: pid, Err: err}
		}
		return err
	}
	return nil
}
