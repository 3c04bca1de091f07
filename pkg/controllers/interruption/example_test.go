package interruption_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/queue"
)

// ExampleMessageType shows the message_type label each queue message is
// counted under.
func ExampleMessageType() {
	bodies := []string{
		`{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`,
		`{"version":"0","id":"2","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","state":"stopping"}}`,
		`{"version":"0","id":"3","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0"}}`,
		`not an event`,
	}
	for _, b := range bodies {
		parsed, err := messages.Parse([]byte(b))
		m := queue.Message{Body: b, Parsed: parsed, ParseErr: err}
		fmt.Println(interruption.MessageType(&m))
	}
	// Output:
	// spot_interrupted
	// instance_stopped
	// rebalance_recommendation
	// malformed
}
