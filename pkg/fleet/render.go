package fleet

import (
	"fmt"
	"strings"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// ANSI sequences of the terminal screen.
const (
	clearScreen = "\x1b[H\x1b[2J"
	bold        = "\x1b[1m"
	reset       = "\x1b[0m"
)

// Bar draws used/total as a bar of width cells with the percentage:
// "[######    ]  60%". total <= 0 draws an empty bar with "  -".
func Bar(used, total int64, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", width) + "]    -"
	}
	frac := float64(used) / float64(total)
	n := int(frac*float64(width) + 0.5)
	n = max(0, min(n, width))
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(" ", width-n), frac*100)
}

// Totals sums the rows.
type Totals struct {
	Nodes, Launching, Spot int
	PricePerHour           float64
	CPURequested, CPUAlloc int64
	MemRequested, MemAlloc int64
	Pods                   int
}

// Sum totals rows.
func Sum(rows []Node) Totals {
	var t Totals
	for _, r := range rows {
		if r.Launching {
			t.Launching++
		} else {
			t.Nodes++
		}
		if r.CapacityType == "spot" {
			t.Spot++
		}
		t.PricePerHour += r.PricePerHour
		t.CPURequested += r.CPURequested
		t.CPUAlloc += r.CPUAllocatable
		t.MemRequested += r.MemoryRequested
		t.MemAlloc += r.MemoryAllocatable
		t.Pods += r.Pods
	}
	return t
}

// Table renders the rows for `dovetail top`: a header line with the
// totals, then one line per node (pool, instance type, capacity type, zone,
// $/h, cpu and memory requested of allocatable as bars). tty adds the
// clear-screen and bold sequences; width clips lines (0: no clipping).
func Table(rows []Node, now time.Time, width int, tty bool) string {
	var b strings.Builder
	t := Sum(rows)
	b0, r0 := "", ""
	if tty {
		b.WriteString(clearScreen)
		b0, r0 = bold, reset
	}
	line := func(s string) {
		if width > 0 && len(s) > width {
			s = s[:width]
		}
		b.WriteString(s + "\n")
	}
	line(fmt.Sprintf("%sdovetail top%s  %s  nodes %d (+%d launching, %d spot)  pods %d  %s$%.4f/h%s ($%.0f/month)",
		b0, r0, now.Format("15:04:05"), t.Nodes, t.Launching, t.Spot, t.Pods, b0, t.PricePerHour, r0, t.PricePerHour*730))
	line(fmt.Sprintf("cpu %s   memory %s", Bar(t.CPURequested, t.CPUAlloc, 20), Bar(t.MemRequested, t.MemAlloc, 20)))
	line("")
	line(fmt.Sprintf("%s%-28s %-14s %-14s %-9s %-11s %8s  %-17s %-17s %4s%s", b0, "NODE", "NODEPOOL", "INSTANCE-TYPE", "CAPACITY", "ZONE", "$/HOUR", "CPU", "MEMORY", "PODS", r0))
	for _, r := range rows {
		name := termtext.Escape(r.Name)
		if r.Launching {
			name += " (launching)"
		}
		price := fmt.Sprintf("%.4f", r.PricePerHour)
		if r.PriceSource == PriceCatalog {
			price += "*"
		} else if r.PriceSource == PriceUnknown {
			price = "?"
		}
		line(fmt.Sprintf("%-28s %-14s %-14s %-9s %-11s %8s  %s %s %4d", name, termtext.Escape(r.Pool), dash(r.InstanceType), dash(r.CapacityType), dash(r.Zone), price,
			Bar(r.CPURequested, r.CPUAllocatable, 10), Bar(r.MemoryRequested, r.MemoryAllocatable, 10), r.Pods))
	}
	if len(rows) == 0 {
		line("(no nodes)")
	}
	line("")
	line("* priced from the built-in catalog (no price recorded on a NodeClaim); bars: requests / allocatable")
	return b.String()
}

// dash is a table cell: "-" for nothing, else s escaped.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return termtext.Escape(s)
}
