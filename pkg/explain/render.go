package explain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// WriteText renders a pod explanation for a person.
func (p *Pod) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s: %s\n", esc(p.Pod), esc(p.State))
	switch p.State {
	case "Bound":
		fmt.Fprintf(&b, "  node:         %s\n", esc(p.Node))
		if p.NodeClaim != "" {
			fmt.Fprintf(&b, "  nodeclaim:    %s\n", esc(p.NodeClaim))
		}
		if p.PlannedOnto != "" {
			fmt.Fprintf(&b, "  planned onto: %s\n", esc(p.PlannedOnto))
		}
		fmt.Fprintf(&b, "  placed by:    %s\n", esc(p.PlacedBy))
		fmt.Fprintf(&b, "\n%s\n", esc(p.Summary))
	case "Pending":
		fmt.Fprintf(&b, "  requests: %s\n", kv(p.Requests))
		fmt.Fprintf(&b, "\nVerdict: %s\n", esc(p.Summary))
		if n := p.Nodes; n != nil {
			fmt.Fprintf(&b, "\nExisting nodes: %d, %d with room\n", n.Total, n.Fit)
			for _, c := range n.Rejected {
				fmt.Fprintf(&b, "  %4d  %s\n", c.Count, esc(c.Reason))
			}
		}
		fmt.Fprintf(&b, "\nNodePools (highest weight first):\n")
		for _, pl := range p.NodePools {
			code := pl.Code
			if code == "" {
				code = "OK"
			}
			fmt.Fprintf(&b, "  %s (weight %d): %s\n    %s\n", esc(pl.Name), pl.Weight, esc(code), esc(pl.Reason))
		}
		if len(p.Fixes) > 0 {
			fmt.Fprintf(&b, "\nTo schedule it:\n")
			for _, f := range p.Fixes {
				fmt.Fprintf(&b, "  - %s\n", esc(f))
			}
		}
	default:
		fmt.Fprintf(&b, "\n%s\n", esc(p.Summary))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText renders a NodeClaim explanation for a person.
func (n *NodeClaim) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "NodeClaim %s (nodepool %s)\n", esc(n.NodeClaim), esc(n.NodePool))
	if len(n.Requests) > 0 {
		fmt.Fprintf(&b, "  requests:  %s\n", kv(n.Requests))
	}
	fmt.Fprintf(&b, "  options:   %d instance types", len(n.Options))
	if len(n.Options) > 0 && len(n.Options) <= 12 {
		fmt.Fprintf(&b, " [%s]", esc(strings.Join(n.Options, " ")))
	}
	b.WriteString("\n")
	for _, mv := range n.MinValues {
		fmt.Fprintf(&b, "  minValues: %s\n", esc(mv))
	}
	if o := n.Offering; o != nil {
		src := "recorded at launch"
		if !o.Recorded {
			src = "from its labels, priced from the catalog"
		}
		price := "$" + formatPrice(o.PricePerHour) + "/h"
		if o.PriceUnknown {
			price, src = "an unknown price", "from its labels; the catalog has no such offering"
		}
		fmt.Fprintf(&b, "  launched:  %s %s in %s at %s (%s)\n", esc(o.InstanceType), esc(o.CapacityType), esc(o.Zone), price, src)
		if ov := o.Overlays; ov != nil && ov.Price != "" {
			fmt.Fprintf(&b, "  overlay:   NodeOverlay %s prices it at $%s/h for decisions (list $%s/h)\n", esc(ov.Price), formatPrice(o.OverlaidPricePerHour), formatPrice(ov.ListPricePerHour))
		}
		if ov := o.Overlays; ov != nil && len(ov.Capacity) > 0 {
			fmt.Fprintf(&b, "  overlay:   capacity set by NodeOverlay %s\n", esc(strings.Join(ov.Capacity, ", ")))
		}
	}
	fmt.Fprintf(&b, "\n%s\n", esc(n.Summary))
	if n.CheaperTotal > 0 {
		fmt.Fprintf(&b, "\nCheaper offerings not taken (%d):\n", n.CheaperTotal)
		for _, c := range n.CheaperReasons {
			fmt.Fprintf(&b, "  %4d  %s\n", c.Count, esc(c.Reason))
		}
		fmt.Fprintf(&b, "\n  %-16s %-12s %-10s %9s  %s\n", "INSTANCE-TYPE", "ZONE", "CAPACITY", "$/HOUR", "WHY NOT")
		for _, a := range n.Cheaper {
			why := a.Reason
			if a.PriceOverlay != "" {
				why += " [price by NodeOverlay " + a.PriceOverlay + "]"
			}
			fmt.Fprintf(&b, "  %-16s %-12s %-10s %9s  %s\n", esc(a.InstanceType), esc(a.Zone), esc(a.CapacityType), formatPrice(a.PricePerHour), esc(why))
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
	return esc(strings.Join(parts, " "))
}

// esc is the one escaping of names, labels and messages in text output
// (termtext.Escape).
func esc(s string) string { return termtext.Escape(s) }
