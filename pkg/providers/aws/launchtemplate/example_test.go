package launchtemplate_test

import (
	"fmt"
	"strings"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
)

// ExampleContent_Name: the name depends on the content only, so equal
// content from any controller replica maps to the same template.
func ExampleContent_Name() {
	c := launchtemplate.Content{
		ImageID: "ami-0123456789abcdef0", SecurityGroupIDs: []string{"sg-1"},
		HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 1, HTTPTokens: "required",
		BlockDevices: launchtemplate.DefaultBlockDevices(awsv1.AMIFamilyAL2023),
	}
	a := c.Name("prod")
	c.HTTPPutResponseHopLimit = 2
	b := c.Name("prod")
	fmt.Println(strings.HasPrefix(a, "dovetail/prod/"), len(a), a == b)
	// Output: true 30 false
}
