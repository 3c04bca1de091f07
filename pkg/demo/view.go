package demo

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// View renders Samples: on a terminal, a screen redrawn in place (plain
// ANSI: clear, home, bold); elsewhere, one line per tick. It keeps the
// history the charts need and the last events.
type View struct {
	w     io.Writer
	tty   bool
	width int
	// History is every sample rendered so far (the charts use the last
	// Width of them).
	History []Sample
	// Log are the last events and scenario notes, newest last.
	Log      []Event
	maxLog   int
	lastSeen int // index in Log of the last event printed on a plain line
}

// NewView returns a view writing to w; tty selects the screen renderer,
// width its width in columns (80 when <= 0).
func NewView(w io.Writer, tty bool, width int) *View {
	if width <= 0 {
		width = 80
	}
	return &View{w: w, tty: tty, width: width, maxLog: 8}
}

// Note adds a line to the log (a scenario step, an event).
func (v *View) Note(e Event) {
	v.Log = append(v.Log, e)
	if extra := len(v.Log) - 200; extra > 0 {
		v.Log = v.Log[extra:]
		v.lastSeen = max(v.lastSeen-extra, 0)
	}
}

// Render draws the sample (and remembers it).
func (v *View) Render(s Sample) error {
	v.History = append(v.History, s)
	if len(v.History) > 10000 {
		v.History = v.History[len(v.History)-10000:]
	}
	if v.tty {
		_, err := io.WriteString(v.w, v.screen())
		return err
	}
	var fresh []string
	for _, e := range v.Log[min(v.lastSeen, len(v.Log)):] {
		fresh = append(fresh, e.Text)
	}
	v.lastSeen = len(v.Log)
	_, err := fmt.Fprintln(v.w, PlainLine(s, strings.Join(fresh, " | ")))
	return err
}

// PlainLine is the non-terminal form of a sample: time, pending and
// running pods, nodes per pool, launching NodeClaims, $/h, and the events
// since the previous line (if any, joined with " | "), as space-separated
// key=value fields; the event field is quoted.
func PlainLine(s Sample, event string) string {
	var pools []string
	for _, p := range s.Pools {
		pools = append(pools, fmt.Sprintf("%s:%d", p.Name, p.Nodes))
	}
	nodes := strings.Join(pools, ",")
	if nodes == "" {
		nodes = "-"
	}
	line := fmt.Sprintf("%s pending=%d running=%d nodes=%s launching=%d cost=$%.4f/h",
		s.Time.Format("15:04:05"), s.Pending, s.Running, nodes, s.Launching, s.PricePerHour)
	if event != "" {
		line += " event=" + strconv.Quote(event)
	}
	return line
}

const (
	clearScreen = "\x1b[H\x1b[2J"
	bold        = "\x1b[1m"
	dim         = "\x1b[2m"
	reset       = "\x1b[0m"
)

// screen builds the whole terminal screen for the newest sample.
func (v *View) screen() string {
	s := v.History[len(v.History)-1]
	var b strings.Builder
	b.WriteString(clearScreen)
	fmt.Fprintf(&b, "%sdovetail local demo%s   %s   (Ctrl-C to stop)\n\n", bold, reset, s.Time.Format("15:04:05"))
	fmt.Fprintf(&b, "pods: %s%d pending%s, %d running     nodes: %d (+%d launching)     cost: %s$%.4f/h%s ($%.2f/month)%s\n\n",
		bold, s.Pending, reset, s.Running, s.Nodes(), s.Launching, bold, s.PricePerHour, reset, s.PricePerHour*730, Savings(v.History))
	fmt.Fprintf(&b, "%s%-16s %5s %10s  %s%s\n", bold, "NODEPOOL", "NODES", "$/H", "INSTANCE TYPES", reset)
	for _, p := range s.Pools {
		var shapes []string
		for _, sh := range p.Shapes {
			shapes = append(shapes, sh.String())
		}
		line := fmt.Sprintf("%-16s %5d %10.4f  %s", p.Name, p.Nodes, p.PricePerHour, strings.Join(shapes, ", "))
		b.WriteString(clip(line, v.width) + "\n")
	}
	if len(s.Pools) == 0 {
		b.WriteString(dim + "(no nodes yet)" + reset + "\n")
	}
	width := max(v.width-24, 10)
	hist := v.History
	if len(hist) > width {
		hist = hist[len(hist)-width:]
	}
	cost := make([]float64, len(hist))
	nodes := make([]float64, len(hist))
	for i, h := range hist {
		cost[i] = h.PricePerHour
		nodes[i] = float64(h.Nodes())
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "$/h   %s  %s\n", Sparkline(cost), rangeLabel(cost, "%.2f"))
	fmt.Fprintf(&b, "nodes %s  %s\n", Sparkline(nodes), rangeLabel(nodes, "%.0f"))
	span := time.Duration(0)
	if len(hist) > 1 {
		span = hist[len(hist)-1].Time.Sub(hist[0].Time).Round(time.Second)
	}
	fmt.Fprintf(&b, "%s      last %s%s\n\n", dim, span, reset)
	fmt.Fprintf(&b, "%sevents%s\n", bold, reset)
	log := v.Log
	if len(log) > v.maxLog {
		log = log[len(log)-v.maxLog:]
	}
	for _, e := range log {
		b.WriteString(clip(e.Time.Format("15:04:05")+" "+e.Text, v.width) + "\n")
	}
	return b.String()
}

func clip(s string, width int) string {
	if len(s) <= width {
		return s
	}
	if width <= 3 {
		return s[:width]
	}
	return s[:width-3] + "..."
}

func rangeLabel(vals []float64, format string) string {
	if len(vals) == 0 {
		return ""
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range vals {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return fmt.Sprintf("min "+format+" max "+format+" now "+format, lo, hi, vals[len(vals)-1])
}

// sparks are the eight block heights of a sparkline.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws vals as one character each, scaled from 0 (or the
// minimum, when it is negative) to the maximum: the lowest block is 0, the
// highest the maximum. All-zero input is a row of the lowest block.
func Sparkline(vals []float64) string {
	if len(vals) == 0 {
		return ""
	}
	lo, hi := 0.0, 0.0
	for _, x := range vals {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	out := make([]rune, len(vals))
	for i, x := range vals {
		level := 0
		if hi > lo {
			level = int(math.Round((x - lo) / (hi - lo) * float64(len(sparks)-1)))
		}
		out[i] = sparks[min(max(level, 0), len(sparks)-1)]
	}
	return string(out)
}

// Savings is the view's savings note: how much less the fleet costs now
// than at its peak over the history ("     saved: $0.2100/h from the peak
// $0.6300/h"), or "" when it costs its peak.
func Savings(history []Sample) string {
	if len(history) == 0 {
		return ""
	}
	peak := 0.0
	for _, h := range history {
		peak = math.Max(peak, h.PricePerHour)
	}
	now := history[len(history)-1].PricePerHour
	if peak-now < 0.00005 {
		return ""
	}
	return fmt.Sprintf("     saved: $%.4f/h from the peak $%.4f/h", peak-now, peak)
}
