package explain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

// NodeResult is `dovetail explain node`: what the disruption planner does
// with one node now and why, and what removing it alone would save.
type NodeResult struct {
	Node     string    `json:"node"`
	NodePool string    `json:"nodePool,omitempty"`
	Adopted  bool      `json:"adopted,omitempty"`
	Now      time.Time `json:"now"`
	// PricePerHour is what the node costs.
	PricePerHour float64 `json:"pricePerHour"`
	// Decision is "kept", or the command's reason (Unhealthy, Empty,
	// Drifted, Underutilized) when a command removes it now.
	Decision string `json:"decision"`
	// Code and Reason say why it is kept.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Command says what the command that removes it does.
	Command string `json:"command,omitempty"`
	// Removable: its pods fit elsewhere if nothing held it;
	// SavingsPerHour is what removing it alone would save, with
	// Replacements new nodes; Blocker names the pod that fits nowhere.
	Removable      bool    `json:"removable"`
	SavingsPerHour float64 `json:"savingsPerHourIfRemoved"`
	Replacements   int     `json:"replacementsIfRemoved"`
	Blocker        string  `json:"blocker,omitempty"`
	// FleetPricePerHour and FleetPricePerHourAfter are the whole fleet's,
	// before and after this pass's commands.
	FleetPricePerHour      float64 `json:"fleetPricePerHour"`
	FleetPricePerHourAfter float64 `json:"fleetPricePerHourAfter"`
}

// ExplainNode plans in and explains node name.
func ExplainNode(in *disruption.Input, name string) (*NodeResult, error) {
	if _, ok := in.Nodes[name]; !ok {
		found := false
		for _, en := range in.Cluster.Nodes {
			if en.Node != nil && en.Node.Name == name {
				found = true
			}
		}
		if !found {
			return nil, &NotFoundError{Kind: "node", Name: name}
		}
	}
	ex, plan, err := disruption.ExplainNode(in, name)
	if err != nil {
		return nil, err
	}
	r := &NodeResult{Node: name, NodePool: ex.NodePool, Adopted: in.Nodes[name].Adopted, Now: in.Now, PricePerHour: ex.PricePerHour,
		Removable: ex.Removable, SavingsPerHour: ex.SavingsPerHour, Replacements: ex.Replacements, Blocker: ex.Blocker,
		FleetPricePerHour: plan.FleetPricePerHour, FleetPricePerHourAfter: plan.FleetPricePerHourAfter}
	switch {
	case ex.Command != nil:
		r.Decision, r.Command = string(ex.Command.Reason), ex.Command.Message
	case ex.Kept != nil:
		r.Decision, r.Code, r.Reason = "kept", string(ex.Kept.Code), ex.Kept.Reason
	}
	return r, nil
}

// WriteText prints the result for a person.
func (r *NodeResult) WriteText(w io.Writer) error {
	var b strings.Builder
	pool := r.NodePool
	if pool == "" {
		pool = "no NodePool"
	} else if r.Adopted {
		pool += " (adopted)"
	}
	fmt.Fprintf(&b, "Node %s (%s, $%.4f/h) at %s\n", esc(r.Node), esc(pool), r.PricePerHour, r.Now.UTC().Format(time.RFC3339))
	if r.Decision == "kept" {
		fmt.Fprintf(&b, "Kept: %s\n  %s\n", esc(r.Code), esc(r.Reason))
	} else {
		fmt.Fprintf(&b, "Disrupted now (%s):\n  %s\n", esc(r.Decision), esc(r.Command))
	}
	switch {
	case r.NodePool == "":
		fmt.Fprintf(&b, "dovetail does not manage it and will not remove it.\n")
	case r.Removable && r.SavingsPerHour > 0 && r.Replacements == 0:
		fmt.Fprintf(&b, "Removing it alone: its pods fit on the rest of the fleet, saving $%.4f/h.\n", r.SavingsPerHour)
	case r.Removable && r.SavingsPerHour > 0:
		fmt.Fprintf(&b, "Removing it alone: its pods fit on the rest of the fleet plus %d new nodes, saving $%.4f/h.\n", r.Replacements, r.SavingsPerHour)
	case r.Removable:
		fmt.Fprintf(&b, "Removing it alone would not save anything: placing its pods elsewhere costs $%.4f/h more.\n", -r.SavingsPerHour)
	default:
		fmt.Fprintf(&b, "It cannot be removed: %s\n", esc(r.Blocker))
	}
	fmt.Fprintf(&b, "Fleet: $%.4f/h now, $%.4f/h after this pass's commands.\n", r.FleetPricePerHour, r.FleetPricePerHourAfter)
	_, err := io.WriteString(w, b.String())
	return err
}
