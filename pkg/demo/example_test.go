package demo_test

import (
	"fmt"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/demo"
)

// ExamplePlainLine shows the line printed per tick without a terminal.
func ExamplePlainLine() {
	s := demo.Sample{
		Time:    time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC),
		Pending: 4, Running: 38, Launching: 1, PricePerHour: 0.4123,
		Pools: []demo.PoolSample{{Name: "arm64-default", Nodes: 3}, {Name: "multi-default", Nodes: 2}},
	}
	fmt.Println(demo.PlainLine(s, "Launched NodeClaim/arm64-default-x7k2p: Launched m7g.xlarge (spot, us-east-1a)"))
	fmt.Println(demo.Sparkline([]float64{0, 1, 2, 4, 8}))
	// Output:
	// 15:04:05 pending=4 running=38 nodes=arm64-default:3,multi-default:2 launching=1 cost=$0.4123/h event="Launched NodeClaim/arm64-default-x7k2p: Launched m7g.xlarge (spot, us-east-1a)"
	// ▁▂▃▅█
}
