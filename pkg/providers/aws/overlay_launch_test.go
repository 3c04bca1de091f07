package aws_test

import (
	"testing"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// TestOverlaidOptionsLaunchInTheEngineOrder: a NodeClaim whose options a
// NodeOverlay ranked (dovetail.sh/price-overlays) with r5.xlarge before the
// cheaper c5.xlarge launches r5.xlarge through an on-demand fleet with the
// prioritized strategy and r5's overrides first; the same options without
// the annotation go to EC2's lowest price, c5.xlarge.
func TestOverlaidOptionsLaunchInTheEngineOrder(t *testing.T) {
	e := newEnv(t, envOptions{})
	launch := func(annotate bool) (string, string, []float64) {
		t.Helper()
		c := e.claim(in(karpv1.LabelInstanceType, "r5.xlarge", "c5.xlarge"), in(karpv1.CapacityTypeLabelKey, "on-demand"))
		if annotate {
			c.Annotations = map[string]string{karpv1.AnnotationPriceOverlays: "r5-deal"}
		}
		before := len(e.emu.FleetRequests())
		got, err := e.p.Create(e.ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		reqs := e.emu.FleetRequests()[before:]
		if len(reqs) != 1 {
			t.Fatalf("%d fleet requests, want 1", len(reqs))
		}
		prio := map[string]float64{}
		var order []float64
		for _, o := range reqs[0].Overrides {
			prio[o.InstanceType] = o.Priority
		}
		order = append(order, prio["r5.xlarge"], prio["c5.xlarge"])
		return got.Labels[karpv1.LabelInstanceType], reqs[0].Applied, order
	}
	typ, strategy, prio := launch(false)
	if typ != "c5.xlarge" || strategy != "lowest-price" {
		t.Errorf("without overlays: launched %s with %s; want EC2's cheapest c5.xlarge by lowest-price", typ, strategy)
	}
	typ, strategy, prio = launch(true)
	if typ != "r5.xlarge" || strategy != "prioritized" || !(prio[0] < prio[1]) {
		t.Errorf("overlaid: launched %s with %s (priorities r5 %v, c5 %v); want r5.xlarge, prioritized, r5 first", typ, strategy, prio[0], prio[1])
	}
}
