package aws

import (
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/repair"
)

// RepairPolicies returns the AWS repair policies (package repair).
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy { return repair.Policies() }
