package aws_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// When live spot prices cannot be had, the controller says so loudly: a
// SpotPricesReady=False condition on the EC2NodeClass, one warning event,
// and the dovetail_cloudprovider_spot_prices_live gauge at 0.
func TestSpotPricesFallbackIsLoud(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	e := newEnv(t, envOptions{provider: awsOptionsWithRecorder(rec)})
	reg := prometheus.NewRegistry()
	if err := reg.Register(e.p.Collectors()[0]); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.p.Collectors()[1:] {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	metric := func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no metric %s", name)
		return 0
	}
	gauge := func() float64 { return metric("dovetail_cloudprovider_spot_prices_live") }
	if err := e.emu.DenyAction("ec2:DescribeSpotPriceHistory"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.GetInstanceTypes(e.ctx, pool(e, e.class)); err != nil {
		t.Fatal(err)
	}
	if g := gauge(); g != 0 {
		t.Errorf("spot_prices_live = %v, want 0", g)
	}
	if n := metric("dovetail_cloudprovider_spot_price_failures_total"); n != 1 {
		t.Errorf("spot_price_failures_total = %v, want 1", n)
	}
	resolved := e.resolve(e.class)
	c := resolved.GetCondition(awsv1.ConditionTypeSpotPricesReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != nodeclass.ReasonSpotPricesUnavailable || !strings.Contains(c.Message, "built-in rule") {
		t.Fatalf("SpotPricesReady = %+v", c)
	}
	if !resolved.IsTrue(awsv1.ConditionTypeReady) {
		t.Error("the class is not Ready: without live spot prices it still launches")
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "Warning "+nodeclass.ReasonSpotPricesUnavailable) || !strings.Contains(ev, "DescribeSpotPriceHistory") {
			t.Errorf("event %q", ev)
		}
	default:
		t.Error("no warning event")
	}
	// Resolving again while still False does not repeat the event.
	e.resolve(resolved)
	select {
	case ev := <-rec.Events:
		t.Errorf("a second event %q", ev)
	default:
	}
}
