package simulate

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// BufferRoom is where a plan keeps one CapacityBuffer's room: of Wanted
// chunks, Existing fit on existing nodes (listed in Nodes), InFlight on
// NodeClaims being launched, New on the plan's new NodeClaims (listed in
// NodeClaims), and Unschedulable nowhere, for Reasons (the engine's code
// and message of each distinct reason).
type BufferRoom struct {
	Buffer        string   `json:"buffer"`
	Wanted        int      `json:"wanted"`
	Existing      int      `json:"existing"`
	InFlight      int      `json:"inFlight"`
	New           int      `json:"new"`
	Unschedulable int      `json:"unschedulable"`
	Nodes         []string `json:"nodes,omitempty"`
	NodeClaims    []string `json:"nodeClaims,omitempty"`
	Reasons       []string `json:"reasons,omitempty"`
}

// bufferRooms converts the plan's buffer room, adding the new NodeClaims
// that hold it and why chunks were left out.
func bufferRooms(plan *engine.Plan) []BufferRoom {
	if len(plan.Buffers) == 0 {
		return nil
	}
	out := make([]BufferRoom, len(plan.Buffers))
	idx := make(map[string]int, len(plan.Buffers))
	for i, b := range plan.Buffers {
		key := b.Namespace + "/" + b.Name
		idx[key] = i
		out[i] = BufferRoom{Buffer: key, Wanted: b.Wanted, Existing: b.Existing, InFlight: b.InFlight, New: b.New,
			Unschedulable: b.Unschedulable, Nodes: slices.Clone(b.Nodes)}
	}
	find := func(ref engine.PodRef) *BufferRoom {
		name, ok := engine.BufferOf(ref)
		if !ok {
			return nil
		}
		i, ok := idx[ref.Namespace+"/"+name]
		if !ok {
			return nil
		}
		return &out[i]
	}
	for _, nc := range plan.NodeClaims {
		for _, ref := range nc.Pods {
			if b := find(ref); b != nil && (len(b.NodeClaims) == 0 || b.NodeClaims[len(b.NodeClaims)-1] != nc.Name) {
				b.NodeClaims = append(b.NodeClaims, nc.Name)
			}
		}
	}
	for _, u := range plan.Unschedulable {
		if b := find(u.Pod); b != nil {
			reason := fmt.Sprintf("%s: %s", u.Code, strings.Join(strings.Fields(u.Message), " "))
			if !slices.Contains(b.Reasons, reason) {
				b.Reasons = append(b.Reasons, reason)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].NodeClaims)
		out[i].NodeClaims = slices.Compact(out[i].NodeClaims)
	}
	return out
}

// renderBuffers writes the table of the buffers' room (nothing without
// buffers).
func renderBuffers(tw *tabwriter.Writer, r *Result) {
	if len(r.Buffers) == 0 {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CAPACITYBUFFER\tWANTED\tEXISTING\tIN-FLIGHT\tNEW\tNOT PLACED\tWHY NOT PLACED")
	for _, b := range r.Buffers {
		why := "-"
		if len(b.Reasons) > 0 {
			why = oneLine(strings.Join(b.Reasons, "; "))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", esc(b.Buffer), b.Wanted, b.Existing, b.InFlight, b.New, b.Unschedulable, why)
	}
}

// bufferSummary is the totals line's note on buffer room ("" without
// buffers).
func bufferSummary(r *Result) string {
	if len(r.Buffers) == 0 {
		return ""
	}
	wanted, placed := 0, 0
	for _, b := range r.Buffers {
		wanted += b.Wanted
		placed += b.Existing + b.InFlight + b.New
	}
	plural := "s"
	if len(r.Buffers) == 1 {
		plural = ""
	}
	return fmt.Sprintf("Buffer room: %d of %d chunks kept (%d buffer%s)\n", placed, wanted, len(r.Buffers), plural)
}
