package explain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText renders a pod explanation for a person.
func (p *Pod) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s: %s\n", p.Pod, p.State)
	switch p.State {
	case "Bound":
		fmt.Fprintf(&b, "  node:         %s\n", p.Node)
		if p.NodeClaim != "" {
			fmt.Fprintf(&b, "  nodeclaim:    %s\n", p.NodeClaim)
		}
		if p.PlannedOnto != "" {
			fmt.Fprintf(&b, "  planned onto: %s\n", p.PlannedOnto)
		}
		fmt.Fprintf(&b, "  placed by:    %s\n", p.PlacedBy)
		fmt.Fprintf(&b, "\n%s\n", p.Summary)
	case "Pending":
		fmt.Fprintf(&b, "  requests: %s\n", kv(p.Requests))
		fmt.Fprintf(&b, "\nVerdict: %s\n", p.Summary)
		if n := p.Nodes; n != nil {
			fmt.Fprintf(&b, "\nExisting nodes: %d, %d with room\n", n.Total, n.Fit)
			for _, c := range n.Rejected {
				fmt.Fprintf(&b, "  %4d  %s\n", c.Count, c.Reason)
			}
		}
		fmt.Fprintf(&b, "\nNodePools (highest weight first):\n")
		for _, pl := range p.NodePools {
			code := pl.Code
			if code == "" {
				code = "OK"
			}
			fmt.Fprintf(&b, "  %s (weight %d): %s\n    %s\n", pl.Name, pl.Weight, code, pl.Reason)
		}
		if len(p.Fixes) > 0 {
			fmt.Fprintf(&b, "\nTo schedule it:\n")
			for _, f := range p.Fixes {
				fmt.Fprintf(&b, "  - %s\n", f)
			}
		}
	default:
		fmt.Fprintf(&b, "\n%s\n", p.Summary)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText renders a NodeClaim explanation for a person.
func (n *NodeClaim) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "NodeClaim %s (nodepool %s)\n", n.NodeClaim, n.NodePool)
	if len(n.Requests) > 0 {
		fmt.Fprintf(&b, "  requests:  %s\n", kv(n.Requests))
	}
	fmt.Fprintf(&b, "  options:   %d instance types", len(n.Options))
	if len(n.Options) > 0 && len(n.Options) <= 12 {
		fmt.Fprintf(&b, " [%s]", strings.Join(n.Options, " "))
	}
	b.WriteString("\n")
	for _, mv := range n.MinValues {
		fmt.Fprintf(&b, "  minValues: %s\n", mv)
	}
	if o := n.Offering; o != nil {
		src := "recorded at launch"
		if !o.Recorded {
			src = "from its labels, priced from the catalog"
		}
		fmt.Fprintf(&b, "  launched:  %s %s in %s at $%s/h (%s)\n", o.InstanceType, o.CapacityType, o.Zone, formatPrice(o.PricePerHour), src)
	}
	fmt.Fprintf(&b, "\n%s\n", n.Summary)
	if n.CheaperTotal > 0 {
		fmt.Fprintf(&b, "\nCheaper offerings not taken (%d):\n", n.CheaperTotal)
		for _, c := range n.CheaperReasons {
			fmt.Fprintf(&b, "  %4d  %s\n", c.Count, c.Reason)
		}
		fmt.Fprintf(&b, "\n  %-16s %-12s %-10s %9s  %s\n", "INSTANCE-TYPE", "ZONE", "CAPACITY", "$/HOUR", "WHY NOT")
		for _, a := range n.Cheaper {
			fmt.Fprintf(&b, "  %-16s %-12s %-10s %9s  %s\n", a.InstanceType, a.Zone, a.CapacityType, formatPrice(a.PricePerHour), a.Reason)
		}
		if n.CheaperTotal > len(n.Cheaper) {
			fmt.Fprintf(&b, "  ... and %d more (-o json lists the first %d)\n", n.CheaperTotal-len(n.Cheaper), len(n.Cheaper))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func kv(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
