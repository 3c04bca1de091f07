package snapshot

import (
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
