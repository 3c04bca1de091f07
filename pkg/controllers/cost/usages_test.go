package cost_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/cost"
)

// TestUsages: only launched NodeClaims with a recorded price count, from
// their Launched transition, with their pool's labels and capacity type.
func TestUsages(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	mk := func(name, price string, launched bool, ct string) karpv1.NodeClaim {
		nc := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{karpv1.NodePoolLabelKey: "web", karpv1.CapacityTypeLabelKey: ct}}}
		if price != "" {
			nc.Annotations = map[string]string{karpv1.AnnotationPricePerHour: price}
		}
		if launched {
			nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", at)
		}
		return nc
	}
	us := cost.Usages([]karpv1.NodeClaim{
		mk("priced", "0.12", true, karpv1.CapacityTypeSpot),
		mk("unpriced", "", true, karpv1.CapacityTypeOnDemand),
		mk("launching", "0.2", false, karpv1.CapacityTypeOnDemand),
		mk("bad-price", "x", true, karpv1.CapacityTypeOnDemand),
	}, map[string]map[string]string{"web": {"team": "a"}})
	if len(us) != 1 {
		t.Fatalf("usages %+v; want only the launched, priced NodeClaim", us)
	}
	u := us[0]
	if u.Pool != "web" || u.Labels["team"] != "a" || u.PricePerHour != 0.12 || !u.Spot || !u.From.Equal(at) {
		t.Errorf("usage %+v", u)
	}
}
