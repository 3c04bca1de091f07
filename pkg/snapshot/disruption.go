package snapshot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

// DisruptionPolicy converts a NodePool's disruption settings (and its
// template's expireAfter) for the disruption planner, applying the API's
// defaults to fields left unset (consolidateAfter 0s, expireAfter 720h;
// budgets stay nil, the planner's default of 10%); a pool with
// spec.replicas is Static (never consolidated). The controller and
// simulate share it.
func DisruptionPolicy(np *karpv1.NodePool) disruption.PoolPolicy {
	d := np.Spec.Disruption
	pp := disruption.PoolPolicy{ConsolidationPolicy: string(d.ConsolidationPolicy), Static: np.Spec.Replicas != nil}
	if r := np.Spec.Replicas; r != nil {
		v := int64(*r)
		pp.Replicas = &v
	}
	pp.MinSavings, _ = PoolMinSavings(np)
	switch ca := d.ConsolidateAfter; {
	case ca.IsZero():
		pp.ConsolidateAfter = new(time.Duration) // the default, 0s
	case !ca.IsNever():
		v, _ := ca.Duration()
		pp.ConsolidateAfter = &v
	}
	switch ea := np.Spec.Template.Spec.ExpireAfter; {
	case ea.IsZero():
		v := 720 * time.Hour // the default
		pp.ExpireAfter = &v
	case !ea.IsNever():
		v, _ := ea.Duration()
		pp.ExpireAfter = &v
	}
	if d.Budgets != nil {
		pp.Budgets = make([]disruption.Budget, 0, len(d.Budgets))
		for _, b := range d.Budgets {
			db := disruption.Budget{Nodes: b.Nodes}
			for _, r := range b.Reasons {
				db.Reasons = append(db.Reasons, disruption.Reason(r))
			}
			if b.Schedule != nil {
				db.Schedule = *b.Schedule
			}
			if b.Duration != nil {
				db.Duration = b.Duration.Duration
			}
			pp.Budgets = append(pp.Budgets, db)
		}
	}
	return pp
}

// PoolMinSavings reads a NodePool's consolidation savings threshold from
// its annotations (karpv1.AnnotationConsolidationMinSavings, per command,
// and AnnotationConsolidationMinSavingsPerPod, per evicted pod: each a
// non-negative decimal of $/h). An annotation absent, or one whose value
// is not such a number, leaves its field nil: the pool takes the
// controller's value. The error names each bad annotation and its value,
// for the NodePool's event (the controller) or a warning (simulate);
// DisruptionPolicy ignores it.
func PoolMinSavings(np *karpv1.NodePool) (disruption.PoolMinSavings, error) {
	var out disruption.PoolMinSavings
	var bad []string
	for _, a := range []struct {
		key string
		dst **float64
	}{{karpv1.AnnotationConsolidationMinSavings, &out.PerCommand}, {karpv1.AnnotationConsolidationMinSavingsPerPod, &out.PerPod}} {
		raw, ok := np.Annotations[a.key]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			shown := raw
			if len(shown) > 64 {
				shown = shown[:64] + "..."
			}
			bad = append(bad, fmt.Sprintf("annotation %s: %q is not a non-negative number of $/h (such as \"0.05\"); the controller's value is used", a.key, shown))
			continue
		}
		*a.dst = &v
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("NodePool %s: %s", np.Name, strings.Join(bad, "; "))
	}
	return out, nil
}
