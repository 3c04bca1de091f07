package dashboards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

type dashboard struct {
	Title      string
	Templating struct {
		List []struct {
			Name       string
			Definition string
		}
	}
	Panels []struct {
		Title   string
		Targets []struct{ Expr string }
	}
}

// required are the panels the issue and docs/install.md promise.
var required = []string{
	"Pending pods",
	"Nodes by NodePool and capacity type",
	"Allocatable vs requested CPU",
	"Allocatable vs requested memory",
	"Cost per hour by NodePool",
	"Cost per hour by team",
	"Launches and terminations",
	"Interruption events by kind",
	"Disruption decisions by reason",
}

// registered are the metric names the controller registers: the
// registry's own and the controllers' (provisioning, interruption).
func registered(t *testing.T) map[string]bool {
	reg := metrics.NewRegistry()
	if _, err := provisioning.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := interruption.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range reg.Names() {
		out[n] = true
	}
	return out
}

func load(t *testing.T) map[string]dashboard {
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = d
	}
	return out
}

// known reports whether a selector's name is a registered metric, or a
// histogram's or summary's _bucket, _sum or _count series of one.
func known(names map[string]bool, n string) bool {
	if names[n] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(n, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

func TestQueriesParseAndUseRegisteredMetrics(t *testing.T) {
	names := registered(t)
	p := parser.NewParser(parser.Options{})
	labelValues := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_]+\)$`)
	for file, d := range load(t) {
		exprs := 0
		for _, panel := range d.Panels {
			if len(panel.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", file, panel.Title)
			}
			for _, target := range panel.Targets {
				exprs++
				e, err := p.ParseExpr(target.Expr)
				if err != nil {
					t.Errorf("%s: panel %q: %q does not parse: %v", file, panel.Title, target.Expr, err)
					continue
				}
				selectors := 0
				parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
					if vs, ok := node.(*parser.VectorSelector); ok {
						selectors++
						if !known(names, vs.Name) {
							t.Errorf("%s: panel %q: %s is not a metric the controller registers", file, panel.Title, vs.Name)
						}
					}
					return nil
				})
				if selectors == 0 {
					t.Errorf("%s: panel %q: %q selects no metric", file, panel.Title, target.Expr)
				}
			}
		}
		for _, v := range d.Templating.List {
			if v.Definition == "" {
				continue
			}
			m := labelValues.FindStringSubmatch(v.Definition)
			if m == nil || !known(names, m[1]) {
				t.Errorf("%s: variable %s: %q does not read a registered metric", file, v.Name, v.Definition)
			}
		}
		if exprs == 0 {
			t.Errorf("%s has no queries", file)
		}
	}
}

func TestRequiredPanelsArePresent(t *testing.T) {
	titles := map[string]bool{}
	for _, d := range load(t) {
		for _, p := range d.Panels {
			titles[p.Title] = true
		}
	}
	for _, r := range required {
		if !titles[r] {
			t.Errorf("no dashboard has the panel %q", r)
		}
	}
}
