package aws_test

import (
	"testing"

	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
)

// TestIsolatedVPCCallsNoPricingAPI: with IsolatedVPC (the peer's
// ISOLATED_VPC) the provider prices instance types without the Pricing API,
// which has no VPC endpoint; without it, it calls pricing:GetProducts.
func TestIsolatedVPCCallsNoPricingAPI(t *testing.T) {
	for _, isolated := range []bool{false, true} {
		e := newEnv(t, envOptions{provider: awsprovider.Options{IsolatedVPC: isolated}})
		types, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class))
		if err != nil {
			t.Fatal(err)
		}
		priced := 0
		for _, it := range types {
			for _, o := range it.Offerings {
				if o.CapacityType == "on-demand" && o.Price > 0 {
					priced++
					break
				}
			}
		}
		pricing := 0
		for _, c := range e.emu.Calls() {
			if c.Service == "pricing" {
				pricing++
			}
		}
		if isolated && pricing != 0 {
			t.Errorf("IsolatedVPC: %d Pricing API calls, want none", pricing)
		}
		if !isolated && pricing == 0 {
			t.Error("without IsolatedVPC no Pricing API call was made: the test proves nothing")
		}
		if priced == 0 {
			t.Errorf("IsolatedVPC=%t: no type has an on-demand price", isolated)
		}
	}
}
