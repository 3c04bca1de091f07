package engine_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// TestIgnoreTopologySpread: Options.IgnoreTopologySpread plans the pods
// exactly as copies of them without spreads are planned (same price, same
// bound, same claims), and leaves the input's pods untouched.
func TestIgnoreTopologySpread(t *testing.T) {
	tried := 0
	for _, c := range workload.TuningFamilies() {
		in := c.Input()
		spread := 0
		for _, p := range in.Pods {
			spread += len(p.Spec.TopologySpreadConstraints)
		}
		if spread == 0 || len(in.Pods) > 400 {
			continue
		}
		tried++
		stripped := *in
		stripped.Pods = make([]*corev1.Pod, len(in.Pods))
		for i, p := range in.Pods {
			q := *p
			q.Spec.TopologySpreadConstraints = nil
			stripped.Pods[i] = &q
		}
		want, err := engine.Solve(&stripped)
		if err != nil {
			t.Fatal(err)
		}
		in.Options.IgnoreTopologySpread = true
		got, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if got.PricePerHour != want.PricePerHour || got.LowerBound != want.LowerBound || len(got.NodeClaims) != len(want.NodeClaims) {
			t.Errorf("%s: ignoring spreads gives $%.4f/h, bound %.4f, %d claims; stripped copies give $%.4f/h, bound %.4f, %d claims",
				c.Name(), got.PricePerHour, got.LowerBound, len(got.NodeClaims), want.PricePerHour, want.LowerBound, len(want.NodeClaims))
		}
		after := 0
		for _, p := range in.Pods {
			after += len(p.Spec.TopologySpreadConstraints)
		}
		if after != spread {
			t.Errorf("%s: the input's pods lost spreads (%d -> %d)", c.Name(), spread, after)
		}
		// And the spreads do matter for this input: without the option the
		// bound is at least as high.
		in.Options.IgnoreTopologySpread = false
		full, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if full.LowerBound < got.LowerBound-1e-9 {
			t.Errorf("%s: the bound with spreads %.4f is below the bound without %.4f", c.Name(), full.LowerBound, got.LowerBound)
		}
		if tried >= 4 {
			break
		}
	}
	if tried == 0 {
		t.Fatal("no family case with topology spreads under 400 pods")
	}
}
