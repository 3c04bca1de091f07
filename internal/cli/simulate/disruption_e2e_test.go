package simulate_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	pkgsim "github.com/dovetail-sh/dovetail/pkg/simulate"
)

const disruptionCluster = simTestdata + "/disruption/cluster.yaml"

func runDisruption(t *testing.T, now, format string) (*pkgsim.DisruptionResult, string) {
	t.Helper()
	stdout, stderr, code := run(t, "", "simulate", "--disruption", "-f", disruptionCluster, "--now", now, "-o", format)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "planning disruption at "+now) || strings.Contains(stdout, "planning") {
		t.Errorf("notices belong on stderr only:\nstdout %q\nstderr %q", stdout, stderr)
	}
	if format != "json" {
		return nil, stdout
	}
	var res pkgsim.DisruptionResult
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not the disruption JSON: %v\n%s", err, stdout)
	}
	return &res, stdout
}

// TestEndToEndDisruption plans the docs' cluster file and checks the facts
// of the answer: which nodes go and by which method, why each other node
// stays, and that the prices add up.
func TestEndToEndDisruption(t *testing.T) {
	res, _ := runDisruption(t, "2026-12-01T10:00:00Z", "json")
	if res.Now != "2026-12-01T10:00:00Z" {
		t.Errorf("now = %q", res.Now)
	}
	inCommand := map[string]string{}
	removed, added := 0.0, 0.0
	for _, c := range res.Commands {
		if len(c.Nodes) == 0 || c.SavingsPerHour <= 0 || c.Reason == "" {
			t.Errorf("command %+v: no nodes, no savings or no reason", c)
		}
		if c.ReplacementPricePerHour > c.PricePerHour {
			t.Errorf("command %+v costs more than it removes", c)
		}
		for _, n := range c.Nodes {
			if prev, dup := inCommand[n]; dup {
				t.Errorf("node %s in two commands (%s, %s)", n, prev, c.Reason)
			}
			inCommand[n] = c.Reason
		}
		removed += c.PricePerHour
		added += c.ReplacementPricePerHour
	}
	// The empty node goes first, by Empty; the drifted node by Drifted.
	if len(res.Commands) < 2 || res.Commands[0].Reason != "Empty" || !slices.Equal(res.Commands[0].Nodes, []string{"empty-a"}) {
		t.Errorf("first command = %+v, want Empty on empty-a", res.Commands)
	}
	if inCommand["old-a"] != "Drifted" {
		t.Errorf("old-a (Drifted condition) is in %q, want a Drifted command", inCommand["old-a"])
	}
	kept := map[string]pkgsim.KeptNode{}
	for _, k := range res.Kept {
		kept[k.Node] = k
		if _, also := inCommand[k.Node]; also {
			t.Errorf("node %s is both kept and in a command", k.Node)
		}
		if k.Reason == "" {
			t.Errorf("kept %s without a reason", k.Node)
		}
	}
	for node, want := range map[string]string{
		"batch-a": "PodDoNotDisrupt", // shop/report-1 has karpenter.sh/do-not-disrupt
		"shop-a":  "PDBBlocked",      // shop/checkout: minAvailable 2 of its 2 pods
		"fresh-a": "ConsolidateAfter",
		"gpu-a":   "Unmanaged", // a taint no NodePool has
	} {
		if kept[node].Code != want {
			t.Errorf("%s kept with %q (%s), want %s", node, kept[node].Code, kept[node].Reason, want)
		}
	}
	if !strings.Contains(kept["batch-a"].Reason, "shop/report-1") || !strings.Contains(kept["shop-a"].Reason, "shop/checkout") {
		t.Errorf("reasons do not name the blocker: %q, %q", kept["batch-a"].Reason, kept["shop-a"].Reason)
	}
	fleet := 0.0
	for _, n := range res.Nodes {
		_, k := kept[n.Name]
		_, c := inCommand[n.Name]
		if k == c {
			t.Errorf("node %s: kept %v, in a command %v; want exactly one", n.Name, k, c)
		}
		if (n.Command > 0) != c {
			t.Errorf("node %s: command index %d, in a command %v", n.Name, n.Command, c)
		}
		if n.PricePerHour <= 0 {
			t.Errorf("node %s has no price", n.Name)
		}
		if n.NodePool != "" {
			fleet += n.PricePerHour
		}
		switch n.Name {
		case "legacy-a":
			if !n.Adopted || n.NodePool != "general" || n.CapacityType != "spot" || n.NodeClaim != "" {
				t.Errorf("legacy-a = %+v, want adopted by general, spot from eks.amazonaws.com/capacityType", n)
			}
		case "gpu-a":
			if n.Adopted || n.NodePool != "" {
				t.Errorf("gpu-a = %+v, want unmanaged", n)
			}
		}
	}
	if len(res.Nodes) != 9 {
		t.Errorf("%d nodes, want 9", len(res.Nodes))
	}
	// The unmanaged node's price is not the fleet's (the planner counts
	// every node with a known price; accept either, but be consistent).
	unmanaged := 0.0
	for _, n := range res.Nodes {
		if n.NodePool == "" {
			unmanaged += n.PricePerHour
		}
	}
	if math.Abs(res.FleetPricePerHour-fleet) > 1e-4 && math.Abs(res.FleetPricePerHour-fleet-unmanaged) > 1e-4 {
		t.Errorf("fleetPricePerHour %v is neither the managed nodes' %v nor all nodes' %v", res.FleetPricePerHour, fleet, fleet+unmanaged)
	}
	if after := res.FleetPricePerHour - removed + added; math.Abs(after-res.FleetPricePerHourAfter) > 1e-4 {
		t.Errorf("fleetPricePerHourAfter %v, want now - removed + replacements = %v", res.FleetPricePerHourAfter, after)
	}
	if math.Abs(res.SavingsPerHour-(res.FleetPricePerHour-res.FleetPricePerHourAfter)) > 1e-6 {
		t.Errorf("savingsPerHour %v", res.SavingsPerHour)
	}
	if res.LowerBoundPricePerHour <= 0 || res.LowerBoundPricePerHour > res.FleetPricePerHourAfter {
		t.Errorf("lower bound %v, fleet after %v", res.LowerBoundPricePerHour, res.FleetPricePerHourAfter)
	}

	// --now moves the answer: 5m after fresh-a's last pod event it is no
	// longer inside consolidateAfter.
	later, _ := runDisruption(t, "2026-12-01T10:04:00Z", "json")
	for _, k := range later.Kept {
		if k.Node == "fresh-a" && k.Code == "ConsolidateAfter" {
			t.Errorf("at 10:04 fresh-a is still kept by consolidateAfter: %s", k.Reason)
		}
	}

	// The same answer as a table and as YAML.
	_, table := runDisruption(t, "2026-12-01T10:00:00Z", "table")
	for _, want := range []string{"KEPT NODE", "PodDoNotDisrupt", "PDBBlocked", "Unmanaged", "Fleet: $", "lower bound: $", "(1 adopted)"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	_, y := runDisruption(t, "2026-12-01T10:00:00Z", "yaml")
	var fromYAML pkgsim.DisruptionResult
	if err := yaml.UnmarshalStrict([]byte(y), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if len(fromYAML.Commands) != len(res.Commands) || len(fromYAML.Kept) != len(res.Kept) || fromYAML.FleetPricePerHourAfter != res.FleetPricePerHourAfter {
		t.Errorf("yaml differs from json: %+v", fromYAML)
	}
}

func TestEndToEndDisruptionBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{name: "bad --now", args: []string{"--disruption", "-f", disruptionCluster, "--now", "tomorrow"}, want: "--now"},
		{name: "--now without --disruption", args: []string{"-f", disruptionCluster, "--now", "2026-12-01T10:00:00Z"}, want: "only with --disruption"},
		{name: "bad annotation", args: []string{"--disruption", "-f", "-"},
			stdin: "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: c, annotations: {dovetail.sh/price-per-hour: lots}}\nspec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}, requirements: []}\nstatus: {nodeName: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
			want:  `-:1 (document 1, NodeClaim "c"): metadata.annotations[dovetail.sh/price-per-hour]`},
		{name: "bad PDB", args: []string{"--disruption", "-f", "-"},
			stdin: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
			want:  `-:1 (document 1, PodDisruptionBudget "b"): spec`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tc.stdin, append([]string{"simulate"}, tc.args...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d stdout %q stderr %q, want 2, nothing, and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}
