package simulate_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// readWithPoolAnnotations reads the docs' cluster file with annotations
// added to NodePool general.
func readWithPoolAnnotations(t *testing.T, ann string) *simulate.Manifests {
	t.Helper()
	data, err := os.ReadFile("testdata/disruption/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if ann != "" {
		const meta = "metadata: {name: general}"
		if !strings.Contains(text, meta) {
			t.Fatal("the cluster file's NodePool general changed shape")
		}
		text = strings.Replace(text, meta, "metadata: {name: general, annotations: {"+ann+"}}", 1)
	}
	m := &simulate.Manifests{}
	if err := m.Read("cluster.yaml", []byte(text)); err != nil {
		t.Fatal(err)
	}
	return m
}

// simulate --disruption honours the pools' consolidation savings
// annotations and the global threshold, and warns about a bad annotation.
func TestDisruptionMinSavings(t *testing.T) {
	run := func(ann string, global disruption.MinSavings) *simulate.DisruptionResult {
		t.Helper()
		res, err := simulate.RunDisruption(readWithPoolAnnotations(t, ann), simulate.Options{Region: "us-east-1", MinSavings: global}, disruptionNow)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	consolidations := func(res *simulate.DisruptionResult) (n int, empties int) {
		for _, c := range res.Commands {
			switch c.Reason {
			case string(disruption.ReasonUnderutilized):
				n++
			case string(disruption.ReasonEmpty):
				empties++
			}
		}
		return n, empties
	}
	belowMin := func(res *simulate.DisruptionResult) int {
		n := 0
		for _, k := range res.Kept {
			if k.Code == string(disruption.CodeMinSavings) {
				n++
			}
		}
		return n
	}
	base := run("", disruption.MinSavings{})
	under, empties := consolidations(base)
	if under == 0 || empties == 0 {
		t.Fatalf("the cluster file has %d consolidations and %d empty commands without a threshold; the test needs both", under, empties)
	}

	for _, tc := range []struct {
		name    string
		ann     string
		global  disruption.MinSavings
		blocked bool
		warn    string
	}{
		{"annotation", `dovetail.sh/consolidation-min-savings: "1000"`, disruption.MinSavings{}, true, ""},
		{"per-pod annotation", `dovetail.sh/consolidation-min-savings-per-pod: "1000"`, disruption.MinSavings{}, true, ""},
		{"global", "", disruption.MinSavings{PerCommand: 1000}, true, ""},
		{"annotation 0 overrides the global", `dovetail.sh/consolidation-min-savings: "0"`, disruption.MinSavings{PerCommand: 1000}, false, ""},
		{"bad annotation: warning, the global is used", `dovetail.sh/consolidation-min-savings: "cheap"`, disruption.MinSavings{PerCommand: 1000}, true, `"cheap"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(tc.ann, tc.global)
			u, e := consolidations(res)
			if e != empties {
				t.Errorf("%d empty commands, want %d (emptiness is never held)", e, empties)
			}
			if tc.blocked && (u != 0 || belowMin(res) == 0) {
				t.Errorf("%d consolidations and %d nodes kept %s; want none and some", u, belowMin(res), disruption.CodeMinSavings)
			}
			if !tc.blocked && (u != under || belowMin(res) != 0) {
				t.Errorf("%d consolidations (want %d) and %d kept %s", u, under, belowMin(res), disruption.CodeMinSavings)
			}
			warned := false
			for _, w := range res.Warnings {
				if strings.Contains(w, "consolidation-min-savings") {
					warned = true
					if !strings.Contains(w, tc.warn) || !strings.Contains(w, "NodePool general") {
						t.Errorf("warning %q does not name the pool and the value %s", w, tc.warn)
					}
				}
			}
			if warned != (tc.warn != "") {
				t.Errorf("warned %v, want %v: %q", warned, tc.warn != "", res.Warnings)
			}
		})
	}
}
