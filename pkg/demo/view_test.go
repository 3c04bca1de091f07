package demo_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/dovetail-sh/dovetail/pkg/demo"
)

var t0 = time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)

func sample(pending, running int, price float64, pools ...demo.PoolSample) demo.Sample {
	return demo.Sample{Time: t0, Pending: pending, Running: running, PricePerHour: price, Pools: pools}
}

func TestPlainLine(t *testing.T) {
	cases := []struct {
		name  string
		s     demo.Sample
		event string
		want  string
	}{
		{name: "empty cluster", s: sample(3, 0, 0), want: "15:04:05 pending=3 running=0 nodes=- launching=0 cost=$0.0000/h"},
		{
			name:  "pools and an event",
			s:     sample(0, 12, 0.123456, demo.PoolSample{Name: "arm64-default", Nodes: 2}, demo.PoolSample{Name: "team-b", Nodes: 1}),
			event: `SpotInterrupted NodeClaim/x: "quoted"`,
			want:  `15:04:05 pending=0 running=12 nodes=arm64-default:2,team-b:1 launching=0 cost=$0.1235/h event="SpotInterrupted NodeClaim/x: \"quoted\""`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := demo.PlainLine(tc.s, tc.event); got != tc.want {
				t.Errorf("PlainLine:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestPlainViewPrintsEveryEventOnce: with no terminal each Render is one
// line, carrying every note added since the previous line.
func TestPlainViewPrintsEveryEventOnce(t *testing.T) {
	var out bytes.Buffer
	v := demo.NewView(&out, false, 0)
	v.Note(demo.Event{Time: t0, Text: "a"})
	v.Note(demo.Event{Time: t0, Text: "b"})
	if err := v.Render(sample(1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := v.Render(sample(0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	v.Note(demo.Event{Time: t0, Text: "c"})
	if err := v.Render(sample(0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for 3 renders:\n%s", len(lines), out.String())
	}
	for i, want := range []string{`event="a | b"`, "", `event="c"`} {
		has := strings.Contains(lines[i], "event=")
		if (want == "") == has || (want != "" && !strings.HasSuffix(lines[i], want)) {
			t.Errorf("line %d = %q, want event %q", i, lines[i], want)
		}
	}
}

func TestScreenShowsPoolsChartsAndEvents(t *testing.T) {
	var out bytes.Buffer
	v := demo.NewView(&out, true, 100)
	pool := demo.PoolSample{Name: "arm64-default", Nodes: 3, PricePerHour: 0.09,
		Shapes: []demo.Shape{{InstanceType: "m7g.large", CapacityType: "spot", Count: 3}}}
	for i := range 5 {
		s := sample(5-i, i, 0.03*float64(i), pool)
		s.Time = t0.Add(time.Duration(i) * time.Second)
		v.Note(demo.Event{Time: s.Time, Text: fmt.Sprintf("event %d", i)})
		out.Reset()
		if err := v.Render(s); err != nil {
			t.Fatal(err)
		}
	}
	screen := out.String()
	for _, want := range []string{"\x1b[H\x1b[2J", "arm64-default", "3x m7g.large spot", "1 pending", "4 running", "$0.1200/h", "last 4s", "event 4", "▁▃▅▆█"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	for i, line := range strings.Split(screen, "\n") {
		if n := utf8.RuneCountInString(stripANSI(line)); n > 100 {
			t.Errorf("line %d is %d columns wide, over 100: %q", i, n, line)
		}
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && !(s[i] >= 'A' && s[i] <= 'Z' || s[i] >= 'a' && s[i] <= 'z') {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestSparklineProperties: one block per value, the maximum drawn as the
// highest block, zero as the lowest, and order preserved.
func TestSparklineProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOfN(rapid.Float64Range(0, 1000), 1, 50).Draw(t, "vals")
		runes := []rune(demo.Sparkline(vals))
		if len(runes) != len(vals) {
			t.Fatalf("%d blocks for %d values", len(runes), len(vals))
		}
		hi := 0.0
		for _, x := range vals {
			hi = max(hi, x)
		}
		for i, x := range vals {
			if hi > 0 && x == hi && runes[i] != '█' {
				t.Fatalf("the maximum %v is drawn %q", x, runes[i])
			}
			if x == 0 && runes[i] != '▁' {
				t.Fatalf("zero is drawn %q", runes[i])
			}
			for j, y := range vals {
				if x < y && runes[i] > runes[j] {
					t.Fatalf("%v drawn higher (%q) than %v (%q)", x, runes[i], y, runes[j])
				}
			}
		}
	})
}

func TestSavings(t *testing.T) {
	at := func(p float64) demo.Sample { return demo.Sample{PricePerHour: p} }
	for _, tc := range []struct {
		hist []demo.Sample
		want string
	}{
		{nil, ""},
		{[]demo.Sample{at(0.1), at(0.5)}, ""},
		{[]demo.Sample{at(0.1), at(0.63), at(0.42)}, "     saved: $0.2100/h from the peak $0.6300/h"},
	} {
		if got := demo.Savings(tc.hist); got != tc.want {
			t.Errorf("demo.Savings(%v) = %q, want %q", tc.hist, got, tc.want)
		}
	}
}
