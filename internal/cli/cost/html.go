package cost

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// HourPoint is one hour of the record, for charts: the dollars spent in
// that hour per group (an hour's dollars are its average $/h), and the
// spot and on-demand parts.
type HourPoint struct {
	Start    time.Time          `json:"start"`
	ByGroup  map[string]float64 `json:"byGroup"`
	Spot     float64            `json:"spot"`
	OnDemand float64            `json:"onDemand"`
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// WriteHTML writes the report as one self-contained HTML page (inline CSS
// and SVG, no scripts or external resources): the table of groups, $/h
// over time per group, and spot against on-demand per hour. Every number
// of the table carries its group and field (data-group, class), so a
// test can read them back from the DOM.
func WriteHTML(w io.Writer, r *Report, now time.Time) error {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>dovetail cost</title><style>
body{font-family:sans-serif;margin:24px;color:#222;background:#fff}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}
th{background:#eef}td.name{text-align:left}h2{margin-top:28px}.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
</style></head><body>`)
	fmt.Fprintf(&b, `<h1>dovetail cost</h1><p>Generated %s, grouped by <b>%s</b>, spent over the last <b id="since">%s</b>. Record: %s.</p>`,
		esc(now.UTC().Format(time.RFC3339)), esc(r.GroupBy), esc(r.Since), esc(r.Record.ConfigMap))
	fmt.Fprintf(&b, `<p>Fleet: <b id="total-price">%.4f</b> $/h now, spot share <b id="spot-share">%.4f</b>; lower bound for its pods <b id="lower-bound">%.4f</b> $/h.</p>`,
		r.Total.PricePerHour, r.SpotShare, r.LowerBoundPricePerHour)
	b.WriteString(`<table id="groups"><tr><th>` + esc(r.GroupBy) + `</th><th>nodes</th><th>spot nodes</th><th>$/h</th><th>spot $/h</th><th>$ spent</th><th>spot $ spent</th><th>node-hours</th></tr>`)
	for _, g := range append(slices.Clone(r.Groups), r.Total) {
		n := esc(g.Name)
		fmt.Fprintf(&b, `<tr><td class="name">%s</td><td class="nodes" data-group="%s">%d</td><td class="spotNodes" data-group="%s">%d</td><td class="pricePerHour" data-group="%s">%.4f</td><td class="spotPricePerHour" data-group="%s">%.4f</td><td class="spent" data-group="%s">%.4f</td><td class="spotSpent" data-group="%s">%.4f</td><td class="nodeHours" data-group="%s">%.4f</td></tr>`,
			n, n, g.Nodes, n, g.SpotNodes, n, g.PricePerHour, n, g.SpotPricePerHour, n, g.Spent, n, g.SpotSpent, n, g.NodeHours)
	}
	b.WriteString(`</table>`)

	groups := seriesGroups(r)
	b.WriteString(`<h2>$/h over time, per ` + esc(r.GroupBy) + `</h2>`)
	if len(r.Series) == 0 {
		b.WriteString(`<p>No hours in the record yet.</p>`)
	} else {
		lineChart(&b, r.Series, groups)
		b.WriteString(`<h2>Spot and on-demand, $ per hour</h2>`)
		stackChart(&b, r.Series)
	}
	b.WriteString(`</body></html>`)
	_, err := io.WriteString(w, b.String())
	return err
}

func seriesGroups(r *Report) []string {
	var out []string
	for _, h := range r.Series {
		for g := range h.ByGroup {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	slices.Sort(out)
	return out
}

const chartW, chartH, pad = 900.0, 260.0, 40.0

func scale(series []HourPoint, top float64) (x func(int) float64, y func(float64) float64) {
	n := max(len(series)-1, 1)
	x = func(i int) float64 { return pad + float64(i)*(chartW-2*pad)/float64(n) }
	y = func(v float64) float64 { return chartH - pad - v/top*(chartH-2*pad) }
	return x, y
}

func axes(b *strings.Builder, series []HourPoint, top float64) {
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#444"/>`, pad, chartH-pad, chartW-pad, chartH-pad)
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#444"/>`, pad, pad, pad, chartH-pad)
	fmt.Fprintf(b, `<text x="4" y="%g" font-size="11">%.3f</text><text x="4" y="%g" font-size="11">0</text>`, pad+4, top, chartH-pad)
	fmt.Fprintf(b, `<text x="%g" y="%g" font-size="11">%s</text>`, pad, chartH-pad+16, series[0].Start.UTC().Format("Jan 2 15:04"))
	fmt.Fprintf(b, `<text x="%g" y="%g" font-size="11" text-anchor="end">%s</text>`, chartW-pad, chartH-pad+16, series[len(series)-1].Start.UTC().Format("Jan 2 15:04"))
}

func lineChart(b *strings.Builder, series []HourPoint, groups []string) {
	top := 0.0
	for _, h := range series {
		for _, v := range h.ByGroup {
			top = math.Max(top, v)
		}
	}
	top = math.Max(top*1.1, 0.001)
	x, y := scale(series, top)
	fmt.Fprintf(b, `<svg id="chart-groups" width="%g" height="%g" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH)
	axes(b, series, top)
	for gi, g := range groups {
		color := palette[gi%len(palette)]
		var pts []string
		for i, h := range series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(h.ByGroup[g])))
		}
		if len(series) == 1 {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`, x(0), y(series[0].ByGroup[g]), color)
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="3" points="%s"/>`, color, strings.Join(pts, " "))
	}
	b.WriteString(`</svg><div class="legend">`)
	for gi, g := range groups {
		fmt.Fprintf(b, `<span><i class="sw" style="background:%s"></i>%s</span>`, palette[gi%len(palette)], html.EscapeString(g))
	}
	b.WriteString(`</div>`)
}

func stackChart(b *strings.Builder, series []HourPoint) {
	top := 0.0
	for _, h := range series {
		top = math.Max(top, h.Spot+h.OnDemand)
	}
	top = math.Max(top*1.1, 0.001)
	_, y := scale(series, top)
	slot := (chartW - 2*pad) / float64(len(series))
	bw := math.Max(slot*0.7, 2)
	fmt.Fprintf(b, `<svg id="chart-spot" width="%g" height="%g" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH)
	axes(b, series, top)
	for i, h := range series {
		x0 := pad + float64(i)*slot + (slot-bw)/2
		od, sp := y(h.OnDemand), y(h.OnDemand+h.Spot)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4c78a8"/>`, x0, od, bw, chartH-pad-od)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#b279a2"/>`, x0, sp, bw, od-sp)
	}
	b.WriteString(`</svg><div class="legend"><span><i class="sw" style="background:#4c78a8"></i>on-demand</span><span><i class="sw" style="background:#b279a2"></i>spot</span></div>`)
}
