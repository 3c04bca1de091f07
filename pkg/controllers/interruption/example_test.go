package interruption_test

import (
	"errors"
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
)

// ExampleMessageType shows the message_type label each provider-neutral
// interruption event is counted under.
func ExampleMessageType() {
	for _, e := range []cloudprovider.InterruptionEvent{
		{Kind: cloudprovider.InterruptionSpot},
		{Kind: cloudprovider.InterruptionStopping, State: "stopping"},
		{Kind: cloudprovider.InterruptionRebalance},
		{Malformed: errors.New("not an event")},
	} {
		fmt.Println(interruption.MessageType(&e))
	}
	// Output:
	// spot_interrupted
	// instance_stopped
	// rebalance_recommendation
	// malformed
}
