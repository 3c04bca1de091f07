package disruption

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// RepairUnhealthyPercent is the repair circuit breaker, as the peer's: a
// pool with more than this share of its nodes (rounded up) unhealthy is not
// repaired until fewer are, since so many failing at once is more likely a
// fault of the cluster or of the signal than of the nodes.
const RepairUnhealthyPercent = 20

// sickness returns the condition of the node that matches a repair
// policy, the one eligible first when several do (nil when none does). A
// fault of a reboot policy on a node rebooted for repair is eligible again
// only once it outlasted its toleration after the last reboot.
func (p *planner) sickness(st NodeState) *sickness {
	var best *sickness
	for _, c := range st.Conditions {
		pol, ok := cloudprovider.RepairPolicyFor(p.in.RepairPolicies, c)
		if !ok {
			continue
		}
		s := &sickness{cond: c, policy: pol, eligibleAt: c.LastTransitionTime.Add(pol.TolerationDuration)}
		if pol.Action == cloudprovider.RepairReboot && st.RepairReboots > 0 {
			if after := st.LastReboot.Add(pol.TolerationDuration); after.After(s.eligibleAt) {
				s.eligibleAt = after
			}
		}
		if best == nil || s.eligibleAt.Before(best.eligibleAt) {
			best = s
		}
	}
	return best
}

// breakerLimit is how many of a pool's nodes may be unhealthy before the
// breaker stops its repair.
func breakerLimit(total int) int {
	return int(math.Ceil(float64(RepairUnhealthyPercent) * float64(total) / 100))
}

// drainBound is the drain bound of a repaired node: the policy's, or the
// NodeClaim's when shorter; nil (the policy sets none) inherits the
// NodeClaim's.
func drainBound(n *cnode) *time.Duration {
	pol := n.sick.policy.TerminationGracePeriod
	if pol == nil {
		return n.st.TerminationGracePeriod
	}
	d := *pol
	if tgp := n.st.TerminationGracePeriod; tgp != nil && *tgp < d {
		d = *tgp
	}
	return &d
}

// repair replaces nodes whose condition has matched a repair policy for
// longer than its toleration (Options.NodeRepair), the longest eligible
// first, one node per command, within the Unhealthy budget, unless more
// than RepairUnhealthyPercent of the pool is unhealthy. do-not-disrupt (on
// the node or its pods) and PDBs do not hold repair when the drain is
// bounded (drainBound): the drain evicts what it can, and what is left
// goes when the bound runs out.
func (p *planner) repair() error {
	if !p.in.Options.NodeRepair {
		return nil
	}
	var cands []*cnode
	for _, n := range p.nodes {
		if n.sick == nil || n.done || p.now.Before(n.sick.eligibleAt) {
			continue
		}
		if n.kept != nil && n.kept.Code != CodeNodeDoNotDisrupt && n.kept.Code != CodeNominated {
			continue // unmanaged, being deleted, not initialized
		}
		n.kept = nil
		cands = append(cands, n)
	}
	slices.SortStableFunc(cands, func(a, b *cnode) int {
		if c := a.sick.eligibleAt.Compare(b.sick.eligibleAt); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	p.lenient = true
	defer func() { p.lenient = false }()
	for _, n := range cands {
		if n.done {
			continue
		}
		n.repairKept = true
		if n.st.DoNotRepair {
			p.keep(n, CodeDoNotRepair, "unhealthy (%s); but node %s has %s", n.sick, n.name, DoNotRepairAnnotation)
			continue
		}
		if sick, total := p.poolSick[n.pool], p.poolNodes[n.pool]; sick > breakerLimit(total) {
			p.keep(n, CodeRepairBreaker, "unhealthy (%s); but %d of the %d nodes of pool %s are unhealthy, more than %d%% (%d): the pool is not repaired until at most %d are",
				n.sick, sick, total, n.pool, RepairUnhealthyPercent, breakerLimit(total), breakerLimit(total))
			continue
		}
		b := p.budgets[n.pool]
		if !b.allows(ReasonUnhealthy, 1) {
			p.keep(n, CodeBudget, "unhealthy (%s); %s", n.sick, b.message(ReasonUnhealthy))
			continue
		}
		if n.sick.policy.Action == cloudprovider.RepairReboot && n.st.RepairReboots < cloudprovider.MaxRepairReboots {
			p.reboot(n)
			continue
		}
		grace := drainBound(n)
		if n.blockCode != "" && grace == nil {
			p.keep(n, CodeRepairBlocked, "unhealthy (%s); but %s, and no terminationGracePeriod (of the repair policy or the NodeClaim) bounds its drain", n.sick, n.blockMsg)
			continue
		}
		res, err := p.settledWhatIf(n)
		if err != nil {
			return err
		}
		if res.failCode == CodeNeededByPending {
			// Provisioning would launch for pending pods the planner
			// placed on the broken node: room it never really had.
			res.failCode, res.failMsg = "", ""
		}
		if res.failCode != "" {
			p.keep(n, CodeRepairBlocked, "unhealthy (%s); but %s", n.sick, res.failMsg)
			continue
		}
		res, limitMsg, err := p.limitHeld(n, res)
		if err != nil {
			return err
		}
		if limitMsg != "" && !p.in.Options.TerminateFirstRepair {
			p.keep(n, CodeRepairBlocked, "unhealthy (%s); but %s (feature gate TerminateFirstRepair is off)", n.sick, limitMsg)
			continue
		}
		n.repairKept = false
		cmd := res.command(ReasonUnhealthy, "")
		cmd.TerminationGracePeriod = grace
		bound := "none (no terminationGracePeriod)"
		if grace != nil {
			bound = grace.String()
		}
		if limitMsg != "" {
			cmd.terminateFirst(n)
			cmd.Message = fmt.Sprintf("Unhealthy (%s): terminating node %s first, provisioning replaces it once its capacity is released (drain bound %s; TerminateFirstRepair: %s)", n.sick, n.name, bound, limitMsg)
		} else if len(cmd.Replacements) == 0 {
			cmd.Message = fmt.Sprintf("Unhealthy (%s): deleting node %s, its pods fit on the rest of the fleet (drain bound %s)", n.sick, n.name, bound)
		} else {
			cmd.Message = fmt.Sprintf("Unhealthy (%s): replacing node %s with %s (drain bound %s)", n.sick, n.name, describeReplacements(cmd.Replacements), bound)
		}
		if err := p.accept(cmd, res, []*cnode{n}); err != nil {
			return err
		}
	}
	return nil
}

// reboot commits a reboot of the node in place (a fault of a reboot
// policy, fewer than MaxRepairReboots reboots so far): no replacement, no
// eviction; the pods stay bound through it.
func (p *planner) reboot(n *cnode) {
	n.repairKept = false
	cmd := Command{Reason: ReasonUnhealthy, Reboot: true}
	p.addNode(&cmd, n)
	cmd.Pods = nil // nothing is evicted
	cmd.Message = fmt.Sprintf("Unhealthy (%s): rebooting node %s in place (reboot %d of at most %d; the fault is repaired by replacement if it outlasts them)",
		n.sick, n.name, n.st.RepairReboots+1, cloudprovider.MaxRepairReboots)
	p.budgets[n.pool].take(ReasonUnhealthy, 1)
	p.plan.Commands = append(p.plan.Commands, cmd)
}

// repairNote says, for an unhealthy node kept for no reason of repair's
// own, when it will be repaired, or that repair is off.
func (p *planner) repairNote(n *cnode) {
	if n.sick == nil || n.repairKept {
		return
	}
	if n.kept != nil {
		switch n.kept.Code {
		case CodeUnmanaged, CodeDeleting, CodeNotInitialized, CodeDestination, CodeRebooting:
			return
		}
	}
	switch {
	case p.now.Before(n.sick.eligibleAt):
		n.kept = &Kept{Node: n.name, Code: CodeRepairTolerating, Reason: fmt.Sprintf("unhealthy (%s); repaired from %s (%s more) if it lasts",
			n.sick, n.sick.eligibleAt.UTC().Format(time.RFC3339), n.sick.eligibleAt.Sub(p.now).Round(time.Second))}
	case !p.in.Options.NodeRepair:
		n.kept = &Kept{Node: n.name, Code: CodeRepairDisabled, Reason: fmt.Sprintf("unhealthy (%s), past its toleration; node repair is off (feature gate NodeRepair)", n.sick)}
	}
}
