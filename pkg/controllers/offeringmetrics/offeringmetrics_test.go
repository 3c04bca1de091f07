package offeringmetrics_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/offeringmetrics"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

// TestOfferingGauges runs the controller against a NodePool: every
// offering of its instance types gets the cloud's price and is available
// until the cloud reports no capacity or dovetail holds it unavailable;
// when no pool is left, the series go.
func TestOfferingGauges(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(offeringmetrics.NewController(env.Manager.GetClient(), env.Cloud, env.Unavailable, env.Metrics,
		offeringmetrics.Options{Interval: 100 * time.Millisecond}))
	np := controllerstest.NodePool("team-a")
	env.Create(np)

	gauges := func(k cloudprovider.OfferingKey, wantAvailable, wantPrice float64) func() (bool, error) {
		return func() (bool, error) {
			// Read without creating the series (WithLabelValues would).
			labels := prometheus.Labels{metrics.LabelInstanceType: k.InstanceType, metrics.LabelCapacityType: k.CapacityType, metrics.LabelZone: k.Zone}
			a, p := metricstest.With(env.Metrics.OfferingAvailable, labels), metricstest.With(env.Metrics.OfferingPriceEstimate, labels)
			if metricstest.Count(a) != 1 || metricstest.Count(p) != 1 {
				return false, fmt.Errorf("%s: no series", k)
			}
			gotA, gotP := metricstest.Value(t, a), metricstest.Value(t, p)
			if gotA != wantAvailable || math.Abs(gotP-wantPrice) > 1e-9 {
				return false, fmt.Errorf("%s: available %v price %v, want %v and %v", k, gotA, gotP, wantAvailable, wantPrice)
			}
			return true, nil
		}
	}
	m5a := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: controllerstest.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand}
	m5bSpot := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: controllerstest.ZoneB, CapacityType: karpv1.CapacityTypeSpot}
	c5b := cloudprovider.OfferingKey{InstanceType: "c5.xlarge", Zone: controllerstest.ZoneB, CapacityType: karpv1.CapacityTypeOnDemand}
	env.Eventually("the on-demand m5.large in zone A", gauges(m5a, 1, 0.096))
	env.Eventually("the spot m5.large in zone B", gauges(m5bSpot, 1, 0.096*0.3*1.01))
	// 3 instance types, 2 zones, 2 capacity types.
	if n := metricstest.Count(env.Metrics.OfferingAvailable); n != 12 {
		t.Errorf("%d availability series, want 12", n)
	}

	// The cloud runs out of spot m5.large in zone B; dovetail holds
	// on-demand c5.xlarge in zone B unavailable after a refusal.
	env.Cloud.SetInsufficientCapacity(m5bSpot, true)
	env.Unavailable.MarkUnavailable(c5b)
	env.Eventually("the spot m5.large unavailable", gauges(m5bSpot, 0, 0.096*0.3*1.01))
	env.Eventually("the held c5.xlarge unavailable", gauges(c5b, 0, 0.17*1.01))
	env.Eventually("the on-demand m5.large still available", gauges(m5a, 1, 0.096))

	env.Delete(np)
	env.Eventually("the series of a cluster without pools to go", func() (bool, error) {
		n := metricstest.Count(env.Metrics.OfferingAvailable) + metricstest.Count(env.Metrics.OfferingPriceEstimate)
		if n != 0 {
			return false, fmt.Errorf("%d series left", n)
		}
		return true, nil
	})
}
