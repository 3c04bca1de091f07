package iampolicy_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/iampolicy"
)

func ExampleControllerPolicies() {
	p := iampolicy.Params{Partition: "aws", Region: "us-east-1", AccountID: "111122223333", ClusterName: "prod", NodeRoleName: "KarpenterNodeRole-prod"}
	var docs []iampolicy.Document
	for _, pol := range iampolicy.ControllerPolicies(p) {
		fmt.Println(pol.Name)
		docs = append(docs, pol.Document)
	}
	d := iampolicy.Allows(docs, "ec2:TerminateInstances", "arn:aws:ec2:us-east-1:111122223333:instance/i-0123456789abcdef0")
	fmt.Println(d.Allowed, d.Statement, d.AssumedConditions)
	// Output:
	// dovetail-NodeLifecycle-prod
	// dovetail-IAMIntegration-prod
	// dovetail-EKSIntegration-prod
	// dovetail-Interruption-prod
	// dovetail-ResourceDiscovery-prod
	// true AllowScopedDeletion [StringEquals StringLike]
}
