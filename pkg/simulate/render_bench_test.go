package simulate_test

import (
	"io"
	"strconv"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// BenchmarkRenderJSON renders 1,000 NodeClaims of 700 instance-type options
// and 20 pods each as -o json.
func BenchmarkRenderJSON(b *testing.B) {
	opts := make([]string, 700)
	for i := range opts {
		opts[i] = "m5." + strconv.Itoa(i) + "xlarge"
	}
	r := &simulate.Result{ExistingNodes: []simulate.ExistingNode{}, Unschedulable: []simulate.Unschedulable{}}
	for i := range 1000 {
		c := simulate.NodeClaim{Name: "p-" + strconv.Itoa(i), InstanceTypeOptions: append([]string(nil), opts...)}
		for j := range 20 {
			c.Pods = append(c.Pods, "default/web-"+strconv.Itoa(i*20+j))
		}
		r.NodeClaims = append(r.NodeClaims, c)
	}
	for b.Loop() {
		if err := simulate.Render(io.Discard, r, simulate.FormatJSON); err != nil {
			b.Fatal(err)
		}
	}
}
