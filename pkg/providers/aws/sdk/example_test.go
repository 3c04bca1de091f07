package sdk_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/sdk"
)

func ExampleDefaultRetry() {
	o := sdk.DefaultRetry()
	fmt.Println(o.MaxAttempts, o.TokenBucket, o.ThrottleRetryCost, sdk.PricingRegion("eu-west-1"))
	// Output: 10 2000 1 us-east-1
}
