package unavailable_test

import (
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

func ExampleCache() {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	cache := unavailable.New(clk, unavailable.DefaultTTL)

	// Create answered "insufficient capacity" for spot c7g.large in one zone.
	refused := cloudprovider.OfferingKey{InstanceType: "c7g.large", Zone: "us-east-1a", CapacityType: "spot"}
	cache.MarkUnavailable(refused)
	fmt.Println("right away:", cache.IsUnavailable(refused))

	clk.Step(3 * time.Minute)
	fmt.Println("three minutes later:", cache.IsUnavailable(refused))
	// Output:
	// right away: true
	// three minutes later: false
}
