package simulate

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// Output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// Formats lists the output formats, sorted.
func Formats() []string { return []string{FormatJSON, FormatTable, FormatYAML} }

// ValidateFormat returns a field error naming the allowed formats when f is
// not one of them.
func ValidateFormat(f string) *field.Error {
	for _, ok := range Formats() {
		if f == ok {
			return nil
		}
	}
	return field.NotSupported(field.NewPath("output"), f, Formats())
}

// Render writes r in the given format: json (indented), yaml (the same
// document), or table (one line per new node, the pods planned onto
// existing nodes, the unschedulable pods with reasons, then the totals, the
// lower bound and the gap between them).
//
// A price or duration that is NaN or infinite is an error in every format
// (the input checks keep them out; this is the last guard).
func Render(w io.Writer, r *Result, format string) error {
	if err := r.checkFinite(); err != nil {
		return err
	}
	switch format {
	case FormatJSON:
		return writeJSON(w, r)
	case FormatYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case FormatTable:
		return renderTable(w, r)
	}
	return ValidateFormat(format)
}

func (r *Result) checkFinite() error {
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
	for _, c := range r.NodeClaims {
		if bad(c.PricePerHour) {
			return fmt.Errorf("the plan's price of NodeClaim %s is %v", c.Name, c.PricePerHour)
		}
	}
	for name, f := range map[string]float64{"total price": r.TotalPricePerHour, "lower bound": r.LowerBoundPricePerHour, "duration": r.DurationSeconds} {
		if bad(f) {
			return fmt.Errorf("the plan's %s is %v", name, f)
		}
	}
	return nil
}

// Gap is plan/bound - 1, or ok=false when there is no bound to compare to.
func (r *Result) Gap() (gap float64, ok bool) {
	if r.LowerBoundPricePerHour <= 0 {
		return 0, false
	}
	return r.TotalPricePerHour/r.LowerBoundPricePerHour - 1, true
}

func renderTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.NodeClaims) > 0 {
		fmt.Fprintln(tw, "NODECLAIM\tNODEPOOL\tINSTANCE-TYPE\tCAPACITY-TYPE\tZONE\t$/HOUR\tOPTIONS\tPODS")
		for _, c := range r.NodeClaims {
			pool := esc(c.NodePool)
			if c.Static {
				pool += " (static)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.4f\t%d\t%d\n", esc(c.Name), pool, esc(c.InstanceType), esc(c.CapacityType), esc(c.Zone), c.PricePerHour, len(c.InstanceTypeOptions), len(c.Pods))
		}
	} else {
		fmt.Fprintln(tw, "No new nodes.")
	}
	if len(r.ExistingNodes) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "EXISTING NODE\tPODS PLACED")
		for _, n := range r.ExistingNodes {
			fmt.Fprintf(tw, "%s\t%d\n", esc(n.Name), len(n.Pods))
		}
	}
	if len(r.Unschedulable) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "UNSCHEDULABLE POD\tCODE\tREASON")
		for _, u := range r.Unschedulable {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", esc(u.Pod), esc(u.Code), oneLine(u.Reason))
		}
	}
	renderBuffers(tw, r)
	renderStatic(tw, r)
	if err := tw.Flush(); err != nil {
		return err
	}
	placedExisting := 0
	for _, n := range r.ExistingNodes {
		placedExisting += len(n.Pods)
	}
	placedNew := 0
	for _, c := range r.NodeClaims {
		placedNew += len(c.Pods)
	}
	gap := "n/a"
	if g, ok := r.Gap(); ok {
		gap = fmt.Sprintf("%.1f%%", 100*g)
	}
	_, err := fmt.Fprintf(w, "\nNew nodes: %d (%d pods), existing capacity: %d pods, unschedulable: %d pods\n"+
		"Total: $%.4f/hour   lower bound: $%.4f/hour   gap: %s   solve time: %s\n",
		len(r.NodeClaims), placedNew, placedExisting, len(r.Unschedulable),
		r.TotalPricePerHour, r.LowerBoundPricePerHour, gap, formatSeconds(r.DurationSeconds))
	if s := bufferSummary(r); s != "" && err == nil {
		_, err = io.WriteString(w, s)
	}
	return err
}

// oneLine joins a message's words with single spaces and escapes the rest
// for a table cell.
func oneLine(s string) string { return esc(strings.Join(strings.Fields(s), " ")) }

// esc is the one escaping of names and messages in text output
// (termtext.Escape).
func esc(s string) string { return termtext.Escape(s) }

func formatSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1fms", s*1e3)
	}
	return fmt.Sprintf("%.2fs", s)
}

// renderStatic writes one line per static NodePool: its replicas, what it
// has, the NodeClaims the plan launches for it and the nodes it removes.
func renderStatic(w io.Writer, r *Result) {
	if len(r.StaticPools) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "STATIC NODEPOOL\tREPLICAS\tHAS\tLAUNCHED\tREMOVED\tNOTE")
	for _, sp := range r.StaticPools {
		removed := make([]string, 0, len(sp.Removed))
		for _, rm := range sp.Removed {
			removed = append(removed, esc(rm.Name)+" ("+esc(rm.Rank)+")")
		}
		gone := "-"
		if len(removed) > 0 {
			gone = strings.Join(removed, ", ")
		}
		note := "-"
		if sp.Limited != "" {
			note = oneLine(sp.Limited)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\n", esc(sp.NodePool), sp.Replicas, sp.Has, sp.Launched, gone, note)
	}
}
