package disruption_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

func f64(v float64) *float64 { return &v }

// minSavingsFleet: two m5.2xlarge nodes with one small pod each (either
// one's pod fits on the other: deleting one saves its whole price) and an
// empty one.
func minSavingsFleet() (*fleet, string, string, string) {
	f := newFleet(types(family("m5")), "on-demand")
	a := f.node("m5.2xlarge", "on-demand", "100m")
	b := f.node("m5.2xlarge", "on-demand", "100m")
	empty := f.node("m5.2xlarge", "on-demand")
	return f, a, b, empty
}

func TestMinSavings(t *testing.T) {
	f, a, b, empty := minSavingsFleet()
	// The saving of deleting one pod-carrying node, with no threshold.
	base := compute(t, f.input(open()))
	var saving float64
	for _, c := range base.Commands {
		if c.Reason == disruption.ReasonUnderutilized {
			saving = c.SavingsPerHour
		}
	}
	if saving <= 0 {
		t.Fatalf("no consolidation without a threshold: %+v kept %+v", base.Commands, base.Kept)
	}
	cases := []struct {
		name    string
		global  disruption.MinSavings
		pool    disruption.PoolMinSavings
		blocked bool
	}{
		{"off", disruption.MinSavings{}, disruption.PoolMinSavings{}, false},
		{"per command below the saving", disruption.MinSavings{PerCommand: saving / 2}, disruption.PoolMinSavings{}, false},
		{"per command above the saving", disruption.MinSavings{PerCommand: saving * 2}, disruption.PoolMinSavings{}, true},
		{"per pod above the saving (1 pod)", disruption.MinSavings{PerPod: saving * 1.5}, disruption.PoolMinSavings{}, true},
		{"per pod below the saving (1 pod)", disruption.MinSavings{PerPod: saving / 2}, disruption.PoolMinSavings{}, false},
		{"pool 0 overrides a global threshold", disruption.MinSavings{PerCommand: saving * 2}, disruption.PoolMinSavings{PerCommand: f64(0)}, false},
		{"pool threshold overrides a global 0", disruption.MinSavings{}, disruption.PoolMinSavings{PerCommand: f64(saving * 2)}, true},
		{"pool per-pod with the global per-command", disruption.MinSavings{PerCommand: saving / 2}, disruption.PoolMinSavings{PerPod: f64(saving * 3)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pp := open()
			pp.MinSavings = tc.pool
			in := f.input(pp)
			in.Options.MinSavings = tc.global
			plan := compute(t, in)
			var empties, under int
			for _, c := range plan.Commands {
				switch c.Reason {
				case disruption.ReasonEmpty:
					empties++
					if len(c.Nodes) != 1 || c.Nodes[0] != empty {
						t.Errorf("empty command %v, want [%s]", c.Nodes, empty)
					}
				case disruption.ReasonUnderutilized:
					under++
					if need := math.Max(tc.global.PerCommand, tc.global.PerPod); tc.pool == (disruption.PoolMinSavings{}) && c.SavingsPerHour < need {
						t.Errorf("command saves $%.4f/h, below the threshold $%.4f/h", c.SavingsPerHour, need)
					}
				}
			}
			// Emptiness is never held by the threshold.
			if empties != 1 {
				t.Errorf("%d empty commands, want 1 (the threshold never holds emptiness): %+v", empties, plan.Commands)
			}
			if tc.blocked {
				if under != 0 {
					t.Fatalf("consolidated below the threshold: %+v", plan.Commands)
				}
				for _, n := range []string{a, b} {
					if got := keptCode(t, plan, n); got != disruption.CodeMinSavings {
						t.Errorf("node %s kept with %s, want %s", n, got, disruption.CodeMinSavings)
					}
				}
				for _, k := range plan.Kept {
					if k.Node == a && !strings.Contains(k.Reason, "below") {
						t.Errorf("kept reason %q does not say the saving is below the minimum", k.Reason)
					}
				}
			} else if under != 1 {
				t.Fatalf("%d Underutilized commands, want 1 (the saving $%.4f/h clears the threshold): kept %+v", under, saving, plan.Kept)
			}
		})
	}
}

func TestMinSavingsInvalid(t *testing.T) {
	f, _, _, _ := minSavingsFleet()
	pp := open()
	pp.MinSavings.PerPod = f64(-1)
	in := f.input(pp)
	in.Options.MinSavings.PerCommand = math.NaN()
	_, err := disruption.Compute(in)
	if err == nil {
		t.Fatal("negative and NaN thresholds accepted")
	}
	for _, want := range []string{"pools[default].minSavings.perPod", "options.minSavings"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
