package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// budgetState is what a pool may still disrupt now, per reason.
type budgetState struct {
	pool        string
	total       int // initialized managed nodes not being deleted
	disrupting  int // NotReady or being deleted
	deleting    int // being deleted (what the Unhealthy budget counts)
	limit       map[Reason]int
	left        map[Reason]int
	taken       int // nodes this pass's earlier commands disrupt
	describe    map[Reason]string
	unparseable string
}

var allReasons = []Reason{ReasonEmpty, ReasonDrifted, ReasonUnderutilized, ReasonUnhealthy}

var defaultBudgets = []Budget{{Nodes: "10%"}}

// newBudgetState evaluates a pool's budgets at now: for each reason, the
// minimum over the active budgets that cover it (an inactive budget does
// not limit; a schedule that does not parse allows 0), less the nodes
// already disrupting, never below 0. A reason no budget covers is
// unlimited (-1). For Unhealthy only the nodes being deleted count as
// disrupting, not the NotReady ones, as the peer does: NotReady is what
// repair acts on, and counting it would let the unhealthy nodes spend the
// budget that repairs them.
func newBudgetState(pool string, pp PoolPolicy, now time.Time, total, disrupting, deleting int) (*budgetState, error) {
	b := &budgetState{pool: pool, total: total, disrupting: disrupting, deleting: deleting,
		limit: map[Reason]int{}, left: map[Reason]int{}, describe: map[Reason]string{}}
	budgets := pp.Budgets
	if budgets == nil {
		budgets = defaultBudgets
	}
	for _, r := range allReasons {
		b.limit[r] = -1
	}
	for i, bu := range budgets {
		n, err := budgetNodes(bu.Nodes, total)
		if err != nil {
			return nil, fmt.Errorf("pools[%s].budgets[%d].nodes: %w", pool, i, err)
		}
		active, err := budgetActive(bu, now)
		if err != nil {
			// The peer treats a schedule it cannot parse as allowing 0.
			n, active = 0, true
			b.unparseable = fmt.Sprintf("budget %d: %v", i, err)
		}
		if !active {
			continue
		}
		reasons := bu.Reasons
		if len(reasons) == 0 {
			reasons = allReasons
		}
		for _, r := range reasons {
			if b.limit[r] < 0 || n < b.limit[r] {
				b.limit[r] = n
				desc := bu.Nodes
				if bu.Schedule != "" {
					desc += fmt.Sprintf(" (schedule %q for %s)", bu.Schedule, bu.Duration)
				}
				b.describe[r] = desc
			}
		}
	}
	for _, r := range allReasons {
		if b.limit[r] < 0 {
			b.left[r] = -1
			continue
		}
		if r == ReasonUnhealthy {
			b.left[r] = max(b.limit[r]-deleting, 0)
			continue
		}
		b.left[r] = max(b.limit[r]-disrupting, 0)
	}
	return b, nil
}

// budgetNodes resolves "5" or "10%" (rounded up) against total.
func budgetNodes(s string, total int) (int, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 100 {
			return 0, fmt.Errorf("%q is not a percentage from 0%% to 100%%", s)
		}
		return int(math.Ceil(float64(v) * float64(total) / 100)), nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a count or a percentage", s)
	}
	return v, nil
}

// budgetActive reports whether a budget is in force at now: always without
// a schedule; with one, when a tick of the schedule (UTC) lies in
// (now-duration, now].
func budgetActive(b Budget, now time.Time) (bool, error) {
	if b.Schedule == "" {
		return true, nil
	}
	sched, err := cron.ParseStandard(b.Schedule)
	if err != nil {
		return false, fmt.Errorf("schedule %q: %w", b.Schedule, err)
	}
	if b.Duration <= 0 {
		return false, nil
	}
	now = now.UTC()
	next := sched.Next(now.Add(-b.Duration).Add(-time.Second))
	return !next.After(now) && next.Add(b.Duration).After(now), nil
}

// allows reports whether n more nodes may be disrupted for r.
func (b *budgetState) allows(r Reason, n int) bool {
	return b.left[r] < 0 || b.left[r] >= n
}

func (b *budgetState) take(r Reason, n int) {
	b.taken += n
	for _, x := range allReasons {
		// A disrupted node counts against every reason's budget of the
		// pool: budgets cap concurrent disruptions, whatever the reason.
		if b.left[x] >= 0 {
			b.left[x] = max(b.left[x]-n, 0)
		}
	}
	_ = r
}

// message explains a spent budget.
func (b *budgetState) message(r Reason) string {
	if b.unparseable != "" && b.limit[r] == 0 {
		return fmt.Sprintf("budget for %s in pool %s allows 0 now: %s", r, b.pool, b.unparseable)
	}
	disrupting := b.disrupting
	if r == ReasonUnhealthy {
		disrupting = b.deleting
	}
	msg := fmt.Sprintf("budget for %s in pool %s allows %d now (%s of %d nodes; %d disrupting",
		r, b.pool, max(b.left[r], 0), b.describe[r], b.total, disrupting)
	if b.taken > 0 {
		msg += fmt.Sprintf(", %d more by earlier commands of this pass", b.taken)
	}
	return msg + ")"
}
