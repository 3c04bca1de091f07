package simulate_test

import (
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestReadRefusesWhatTheAPIServerRefuses is issue 34 item 4: what the API
// server refuses in any object's metadata, and a duplicate key (which a
// lenient YAML reader resolves last-wins), are input errors naming the
// field.
func TestReadRefusesWhatTheAPIServerRefuses(t *testing.T) {
	pod := func(meta, requests string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: " + meta + "\nspec: {containers: [{name: c, resources: {requests: " + requests + "}}]}\n"
	}
	cases := []struct{ name, in, want string }{
		{"duplicate key", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 1\n        cpu: 100\n", `"cpu" already set in map`},
		{"NUL in name", pod(`{name: "p\u0000"}`, "{}"), "metadata.name: Invalid value"},
		{"ESC in name", pod(`{name: "p\u001b[2J"}`, "{}"), "metadata.name: Invalid value"},
		{"100,000-character name", pod("{name: "+strings.Repeat("a", 100000)+"}", "{}"), "metadata.name: Invalid value"},
		{"1 MiB annotation", pod("{name: p, annotations: {a: "+strings.Repeat("x", 1<<20)+"}}", "{}"), "metadata.annotations: Too long"},
		{"ESC in a label key", pod(`{name: p, labels: {"a\u001bb": v}}`, "{}"), "metadata.labels: Invalid value"},
		{"uppercase name", pod("{name: Web}", "{}"), "metadata.name: Invalid value"},
		{"node name", "apiVersion: v1\nkind: Node\nmetadata: {name: \"n\\r\\nx\"}\n", "metadata.name: Invalid value"},
		{"nodepool label value", strings.Replace(poolDoc, "metadata: {name: general}", "metadata: {name: general, labels: {team: \""+strings.Repeat("v", 64)+"\"}}", 1), "metadata.labels: Invalid value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m simulate.Manifests
			err := m.Read("in.yaml", []byte(nodeClassDoc+"---\n"+c.in))
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %.600q, want it to contain %q", err.Error(), c.want)
			}
			if len(err.Error()) > 4096 {
				t.Fatalf("error is %d bytes: it echoes too much of the input", len(err.Error()))
			}
		})
	}
}
