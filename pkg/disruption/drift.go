package disruption

// Drift: drifted nodes replaced one at a time; terminate-first commands.

import (
	"fmt"
	"slices"
	"strings"
)

// drift replaces drifted nodes one at a time: empty ones first, then the
// oldest.
func (p *planner) drift() error {
	var cands []*cnode
	for _, n := range p.nodes {
		if n.done || n.st.Drifted == "" {
			continue
		}
		// What keeps an empty node from consolidation does not keep it from
		// drift: its consolidateAfter, and the room it holds for pending
		// pods or a CapacityBuffer (the replacement, launched first, takes
		// that room over).
		if n.kept != nil && !(n.kept.Code == CodeConsolidateAfter || n.kept.Code == CodeConsolidationDisabled ||
			n.kept.Code == CodeBufferRoom || n.kept.Code == CodeNeededByPending) {
			continue
		}
		n.heldRoom = n.kept != nil && (n.kept.Code == CodeBufferRoom || n.kept.Code == CodeNeededByPending)
		n.kept = nil
		if n.blockCode != "" && n.st.TerminationGracePeriod == nil {
			p.keep(n, n.blockCode, "drifted (%s), but %s", n.st.Drifted, n.blockMsg)
			continue
		}
		cands = append(cands, n)
	}
	slices.SortStableFunc(cands, func(a, b *cnode) int {
		if (len(a.pods) == 0) != (len(b.pods) == 0) {
			if len(a.pods) == 0 {
				return -1
			}
			return 1
		}
		if c := a.st.Created.Compare(b.st.Created); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for _, n := range cands {
		if n.kept != nil {
			continue
		}
		b := p.budgets[n.pool]
		if !b.allows(ReasonDrifted, 1) {
			p.keep(n, CodeBudget, "drifted (%s); %s", n.st.Drifted, b.message(ReasonDrifted))
			continue
		}
		if i, ok := p.pdbBlock(n.pdbs); ok && n.st.TerminationGracePeriod == nil {
			pdb := p.in.PDBs[i]
			p.keep(n, CodePDB, "drifted (%s), but PDB %s/%s has no disruption left in this pass (earlier commands took it) and the node has %d of its pods", n.st.Drifted, pdb.Namespace, pdb.Name, n.pdbs[i])
			continue
		}
		res, err := p.settledWhatIf(n)
		if err != nil {
			return err
		}
		if res.failCode == CodeNeededByPending && n.heldRoom {
			// The node held room for pending pods or a CapacityBuffer:
			// provisioning launches that room again once the node is
			// tainted (the churn is the point).
			res.failCode, res.failMsg = "", ""
		}
		if res.failCode != "" {
			p.keep(n, CodeDriftBlocked, "drifted (%s), but %s", n.st.Drifted, res.failMsg)
			continue
		}
		res, limitMsg, err := p.limitHeld(n, res)
		if err != nil {
			return err
		}
		if limitMsg != "" && !p.in.Options.TerminateFirstDrift {
			p.keep(n, CodeDriftBlocked, "drifted (%s), but %s (feature gate TerminateFirstDrift is off)", n.st.Drifted, limitMsg)
			continue
		}
		cmd := res.command(ReasonDrifted, "")
		cmd.Message = fmt.Sprintf("Drifted (%s): replacing node %s with %d new nodes", n.st.Drifted, n.name, len(cmd.Replacements))
		if limitMsg != "" {
			cmd.terminateFirst(n)
			cmd.Message = fmt.Sprintf("Drifted (%s): terminating node %s first, provisioning replaces it once its capacity is released (TerminateFirstDrift: %s)", n.st.Drifted, n.name, limitMsg)
		} else if len(cmd.Replacements) == 0 && n.heldRoom {
			cmd.Message = fmt.Sprintf("Drifted (%s): deleting node %s; provisioning launches the room it held for pending pods or a CapacityBuffer again", n.st.Drifted, n.name)
		} else if len(cmd.Replacements) == 0 {
			cmd.Message = fmt.Sprintf("Drifted (%s): deleting node %s, its pods fit on the rest of the fleet", n.st.Drifted, n.name)
		}
		if err := p.accept(cmd, res, []*cnode{n}); err != nil {
			return err
		}
	}
	return nil
}

// terminateFirst makes a replace-first command delete-only: its node
// goes first and provisioning launches for its pods once the capacity is
// released (TerminateFirstDrift, TerminateFirstRepair).
func (c *Command) terminateFirst(n *cnode) {
	c.TerminateFirst = true
	c.TerminateFirstReason = TerminateFirstPoolAtLimit
	if n.policy.Static {
		c.TerminateFirstReason = TerminateFirstStaticAtLimit
	}
	c.Replacements = nil
	c.ReplacementPricePerHour = 0
}
