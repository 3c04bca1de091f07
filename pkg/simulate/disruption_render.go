package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

// DisruptionResult is the outcome of `dovetail simulate --disruption`, in
// the shape -o json prints.
type DisruptionResult struct {
	// Now is the time the plan is for (RFC 3339).
	Now string `json:"now"`
	// Commands are the planner's commands, in order; each assumes the ones
	// before it done.
	Commands []DisruptionCommand `json:"commands"`
	// Kept is every node not in a command, with the planner's code and
	// reason, sorted by node.
	Kept []KeptNode `json:"kept"`
	// Nodes are the input's nodes as the planner saw them, sorted by name.
	Nodes []DisruptionNode `json:"nodes"`
	// Expiring are nodes whose expireAfter ends soon (expiration is
	// forceful, not planned).
	Expiring []ExpiringNode `json:"expiring"`
	// FleetPricePerHour is the $/h of every node with a known price;
	// FleetPricePerHourAfter the same once every command is done.
	FleetPricePerHour      float64 `json:"fleetPricePerHour"`
	FleetPricePerHourAfter float64 `json:"fleetPricePerHourAfter"`
	// SavingsPerHour is FleetPricePerHour - FleetPricePerHourAfter.
	SavingsPerHour float64 `json:"savingsPerHour"`
	// LowerBoundPricePerHour is the planner's proven lower bound on the
	// $/h of any fleet that holds the pods on managed capacity.
	LowerBoundPricePerHour float64 `json:"lowerBoundPricePerHour"`
	// PendingPods counts the pods waiting for a node: the lower bound
	// covers them, the fleet after the commands does not.
	PendingPods int `json:"pendingPods"`
	// DurationSeconds is the planner's run time, measured around the call.
	DurationSeconds float64 `json:"durationSeconds"`
	// StaticPools (only when the input has static NodePools) are what the
	// static controller does for each: Launched of its missing replicas
	// (Limited says why fewer), in StaticNodeClaims. They were in flight
	// for the planner (its commands may move pods onto them); the fleet
	// prices above cover nodes only, StaticPricePerHour is the launches'.
	StaticPools        []StaticPool      `json:"staticPools,omitempty"`
	StaticNodeClaims   []StaticNodeClaim `json:"staticNodeClaims,omitempty"`
	StaticPricePerHour float64           `json:"staticPricePerHour,omitempty"`

	// Warnings are notices about the input (not printed with the data).
	Warnings []string `json:"-"`
	// Stats are the planner's counts.
	Stats disruption.Stats `json:"-"`
}

// DisruptionCommand is one planned disruption.
type DisruptionCommand struct {
	// Reason is Empty, Drifted or Underutilized.
	Reason string `json:"reason"`
	// ConsolidationType is empty, single or multi ("" for drift).
	ConsolidationType string `json:"consolidationType,omitempty"`
	// Nodes are removed; NodeClaims are theirs, in the same order.
	Nodes      []string `json:"nodes"`
	NodeClaims []string `json:"nodeClaims"`
	// Replacements are launched first (the cheapest offering of each, and
	// the instance types it may launch as).
	Replacements []NodeClaim `json:"replacements"`
	// Pods are the pods evicted.
	Pods []string `json:"pods"`
	// PricePerHour is what the nodes cost; ReplacementPricePerHour what
	// the replacements cost; SavingsPerHour what the command saves.
	PricePerHour            float64 `json:"pricePerHour"`
	ReplacementPricePerHour float64 `json:"replacementPricePerHour"`
	SavingsPerHour          float64 `json:"savingsPerHour"`
	// DisruptionCost is the eviction cost of the pods, weighted by the
	// nodes' remaining lifetime.
	DisruptionCost float64 `json:"disruptionCost"`
	Message        string  `json:"message"`
}

// KeptNode is a node the plan keeps, with why.
type KeptNode struct {
	Node     string `json:"node"`
	NodePool string `json:"nodePool,omitempty"`
	// Adopted: the node has no karpenter.sh/nodepool and NodePool was
	// chosen by its labels and taints.
	Adopted bool   `json:"adopted,omitempty"`
	Code    string `json:"code"`
	Reason  string `json:"reason"`
}

// DisruptionNode is a node of the input as the planner saw it.
type DisruptionNode struct {
	Name      string `json:"name"`
	NodeClaim string `json:"nodeClaim,omitempty"`
	// NodePool is "" for an unmanaged node.
	NodePool     string  `json:"nodePool,omitempty"`
	Adopted      bool    `json:"adopted,omitempty"`
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	PricePerHour float64 `json:"pricePerHour"`
	// Pods counts the pods bound to it.
	Pods int `json:"pods"`
	// Command is the 1-based index of the command that removes it, 0 when
	// kept.
	Command int `json:"command,omitempty"`
}

// StaticNodeClaim is a NodeClaim the static controller launches for a
// missing replica.
type StaticNodeClaim struct {
	Name         string  `json:"name"`
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	PricePerHour float64 `json:"pricePerHour"`
}

// addStatic records what the static pools launch.
func (r *DisruptionResult) addStatic(pools []StaticPool, claims []staticClaim) {
	r.StaticPools = pools
	total := 0.0
	for _, c := range claims {
		off := c.planned.Offering
		r.StaticNodeClaims = append(r.StaticNodeClaims, StaticNodeClaim{Name: c.name, NodePool: c.planned.NodePool,
			InstanceType: off.InstanceType, CapacityType: off.CapacityType, Zone: off.Zone, PricePerHour: off.Price})
		total += off.Price
	}
	r.StaticPricePerHour = roundPrice(total)
}

// ExpiringNode is a node whose expireAfter ends soon.
type ExpiringNode struct {
	Node     string `json:"node"`
	ExpireAt string `json:"expireAt"`
}

// FromDisruptionPlan converts a plan for in into a DisruptionResult
// (DurationSeconds and Warnings left zero).
func FromDisruptionPlan(in *disruption.Input, plan *disruption.Plan) *DisruptionResult {
	r := &DisruptionResult{
		Now:      in.Now.UTC().Format(time.RFC3339),
		Commands: []DisruptionCommand{}, Kept: []KeptNode{}, Nodes: []DisruptionNode{}, Expiring: []ExpiringNode{},
		FleetPricePerHour:      roundPrice(plan.FleetPricePerHour),
		FleetPricePerHourAfter: roundPrice(plan.FleetPricePerHourAfter),
		SavingsPerHour:         roundPrice(plan.FleetPricePerHour - plan.FleetPricePerHourAfter),
		LowerBoundPricePerHour: roundPrice(plan.LowerBoundPricePerHour),
		PendingPods:            len(in.Cluster.Pods),
		Stats:                  plan.Stats,
	}
	removedBy := map[string]int{}
	for i, c := range plan.Commands {
		dc := DisruptionCommand{
			Reason: string(c.Reason), ConsolidationType: c.ConsolidationType,
			Nodes: append([]string{}, c.Nodes...), NodeClaims: append([]string{}, c.NodeClaims...),
			Replacements: []NodeClaim{}, Pods: make([]string, 0, len(c.Pods)),
			PricePerHour: roundPrice(c.PricePerHour), ReplacementPricePerHour: roundPrice(c.ReplacementPricePerHour),
			SavingsPerHour: roundPrice(c.SavingsPerHour), DisruptionCost: roundPrice(c.DisruptionCost),
			Message: c.Message,
		}
		for _, nc := range c.Replacements {
			rc := NodeClaim{
				Name: nc.Name, NodePool: nc.NodePool,
				InstanceType: nc.Offering.InstanceType, InstanceTypeOptions: append([]string{}, nc.InstanceTypeOptions...),
				CapacityType: nc.Offering.CapacityType, Zone: nc.Offering.Zone, PricePerHour: nc.Offering.Price,
				Pods: make([]string, 0, len(nc.Pods)),
			}
			for _, p := range nc.Pods {
				rc.Pods = append(rc.Pods, p.String())
			}
			dc.Replacements = append(dc.Replacements, rc)
		}
		for _, p := range c.Pods {
			dc.Pods = append(dc.Pods, p.String())
		}
		for _, n := range c.Nodes {
			removedBy[n] = i + 1
		}
		r.Commands = append(r.Commands, dc)
	}
	for _, k := range plan.Kept {
		st := in.Nodes[k.Node]
		r.Kept = append(r.Kept, KeptNode{Node: k.Node, NodePool: st.NodePool, Adopted: st.Adopted, Code: string(k.Code), Reason: k.Reason})
	}
	slices.SortStableFunc(r.Kept, func(a, b KeptNode) int { return strings.Compare(a.Node, b.Node) })
	for _, en := range in.Cluster.Nodes {
		st := in.Nodes[en.Node.Name]
		r.Nodes = append(r.Nodes, DisruptionNode{
			Name: en.Node.Name, NodeClaim: st.NodeClaim, NodePool: st.NodePool, Adopted: st.Adopted,
			InstanceType: st.InstanceType, CapacityType: st.CapacityType, Zone: st.Zone,
			PricePerHour: roundPrice(st.PricePerHour), Pods: len(en.Pods), Command: removedBy[en.Node.Name],
		})
	}
	slices.SortStableFunc(r.Nodes, func(a, b DisruptionNode) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range plan.Expiring {
		r.Expiring = append(r.Expiring, ExpiringNode{Node: e.Node, ExpireAt: e.ExpireAt.UTC().Format(time.RFC3339)})
	}
	return r
}

// RenderDisruption writes r as json (indented), yaml (the same document)
// or a table: the commands, the kept nodes with their codes and reasons,
// the expiring nodes, then the fleet's $/h now and after, the lower bound
// and the gap after (not with pending pods, which the bound covers and the
// fleet does not).
func RenderDisruption(w io.Writer, r *DisruptionResult, format string) error {
	switch format {
	case FormatJSON:
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(data, '\n'))
		return err
	case FormatYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case FormatTable:
		return renderDisruptionTable(w, r)
	}
	return ValidateFormat(format)
}

func renderDisruptionTable(w io.Writer, r *DisruptionResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Commands) > 0 {
		fmt.Fprintln(tw, "#\tREASON\tTYPE\tNODES\tREPLACEMENTS\t$/HOUR SAVED\tDISRUPTION COST\tPODS")
		for i, c := range r.Commands {
			repl := make([]string, 0, len(c.Replacements))
			for _, nc := range c.Replacements {
				repl = append(repl, fmt.Sprintf("%s (%s, %s, $%.4f)", esc(nc.InstanceType), esc(nc.CapacityType), esc(nc.Zone), nc.PricePerHour))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.4f\t%.2f\t%d\n", i+1, esc(c.Reason), dash(c.ConsolidationType),
				esc(strings.Join(c.Nodes, ",")), dash(strings.Join(repl, ", ")), c.SavingsPerHour, c.DisruptionCost, len(c.Pods))
		}
	} else {
		fmt.Fprintln(tw, "No disruption commands.")
	}
	if len(r.Kept) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "KEPT NODE\tNODEPOOL\tCODE\tREASON")
		for _, k := range r.Kept {
			pool := dash(k.NodePool)
			if k.Adopted {
				pool += " (adopted)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", esc(k.Node), pool, esc(k.Code), oneLine(k.Reason))
		}
	}
	if len(r.StaticPools) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "STATIC NODEPOOL\tREPLICAS\tHAS\tLAUNCHES\tWHY FEWER")
		for _, sp := range r.StaticPools {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", esc(sp.NodePool), sp.Replicas, sp.Has, sp.Launched, dash(oneLine(sp.Limited)))
		}
		for _, nc := range r.StaticNodeClaims {
			fmt.Fprintf(tw, "  %s\t%s (%s, %s, $%.4f)\t\t\t\n", esc(nc.Name), esc(nc.InstanceType), esc(nc.CapacityType), esc(nc.Zone), nc.PricePerHour)
		}
	}
	if len(r.Expiring) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "EXPIRING NODE\tEXPIRES AT")
		for _, e := range r.Expiring {
			fmt.Fprintf(tw, "%s\t%s\n", esc(e.Node), esc(e.ExpireAt))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	removed, launched := 0, 0
	for _, c := range r.Commands {
		removed += len(c.Nodes)
		launched += len(c.Replacements)
	}
	adopted := 0
	for _, n := range r.Nodes {
		if n.Adopted {
			adopted++
		}
	}
	gap := "n/a"
	switch {
	case r.PendingPods > 0:
		gap = fmt.Sprintf("n/a (%d pending pods)", r.PendingPods)
	case r.LowerBoundPricePerHour > 0:
		gap = fmt.Sprintf("%.1f%%", 100*(r.FleetPricePerHourAfter/r.LowerBoundPricePerHour-1))
	}
	_, err := fmt.Fprintf(w, "\nAt %s: %d nodes (%d adopted), %d commands remove %d nodes and launch %d\n"+
		"Fleet: $%.4f/hour now, $%.4f/hour after (saves $%.4f/hour)   lower bound: $%.4f/hour   gap after: %s   plan time: %s\n",
		esc(r.Now), len(r.Nodes), adopted, len(r.Commands), removed, launched,
		r.FleetPricePerHour, r.FleetPricePerHourAfter, r.SavingsPerHour, r.LowerBoundPricePerHour, gap, formatSeconds(r.DurationSeconds))
	if err == nil && len(r.StaticNodeClaims) > 0 {
		_, err = fmt.Fprintf(w, "Static NodePools launch %d NodeClaims for missing replicas: $%.4f/hour more (not in the fleet figures)\n",
			len(r.StaticNodeClaims), r.StaticPricePerHour)
	}
	return err
}

// dash is a table cell: "-" for nothing, else s escaped.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return esc(s)
}
