package messages_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
)

func ExampleParse() {
	body := []byte(`{"version":"0","id":"7a1b","detail-type":"EC2 Spot Instance Interruption Warning",
		"source":"aws.ec2","time":"2026-11-30T04:00:00Z","region":"us-east-1",
		"detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`)
	m, err := messages.Parse(body)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Kind, m.InstanceIDs, m.Disruptive())
	// Output: spot_interrupted [i-0123456789abcdef0] true
}
