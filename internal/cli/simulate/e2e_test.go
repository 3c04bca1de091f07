package simulate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pkgsim "github.com/dovetail-sh/dovetail/pkg/simulate"
)

// binary is the dovetail command built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dovetail-simulate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "dovetail")
	build := exec.Command("go", "build", "-o", binary, "github.com/dovetail-sh/dovetail/cmd/dovetail")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dovetail:", err)
		return 1
	}
	return m.Run()
}

// run executes the built binary and returns stdout, stderr and the exit
// code.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

const simTestdata = "../../../pkg/simulate/testdata"

// TestEndToEndPlan runs the seed-cluster NodePools with a mixed workload
// over the built-in catalog and checks the plan's facts from the JSON.
func TestEndToEndPlan(t *testing.T) {
	stdout, stderr, code := run(t, "", "simulate", "-f", simTestdata+"/basic", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "solving") || strings.Contains(stdout, "solving") {
		t.Errorf("notices belong on stderr only:\nstdout %q\nstderr %q", stdout, stderr)
	}
	var res pkgsim.Result
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not the plan JSON: %v\n%s", err, stdout)
	}
	// 6 web + 3 report (parallelism 3 of 10) + 2 db + giant, each once.
	seen := map[string]int{}
	sum := 0.0
	for _, c := range res.NodeClaims {
		sum += c.PricePerHour
		for _, p := range c.Pods {
			seen[p]++
			switch {
			case strings.HasPrefix(p, "team-b/db-"):
				if c.NodePool != "team-b" || c.Zone != "us-east-1b" {
					t.Errorf("%s on %s in %s: wants the team-b pool (node selector) and us-east-1b (its volume)", p, c.NodePool, c.Zone)
				}
			case strings.HasPrefix(p, "default/report-"):
				if c.NodePool == "arm64-default" {
					t.Errorf("%s needs amd64 but went to the arm64 pool", p)
				}
			}
		}
	}
	for _, u := range res.Unschedulable {
		seen[u.Pod]++
	}
	want := []string{"default/giant", "team-b/db-0", "team-b/db-1", "default/report-0", "default/report-1", "default/report-2"}
	for i := range 6 {
		want = append(want, fmt.Sprintf("shop/web-%d", i))
	}
	for _, p := range want {
		if seen[p] != 1 {
			t.Errorf("%s appears %d times", p, seen[p])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("plan has %d pods, want %d: %v", len(seen), len(want), seen)
	}
	if d := sum - res.TotalPricePerHour; d > 1e-6 || d < -1e-6 {
		t.Errorf("total %v != sum %v", res.TotalPricePerHour, sum)
	}
	if len(res.Unschedulable) != 1 || res.Unschedulable[0].Code != "ResourcesExceedAllTypes" {
		t.Errorf("unschedulable = %+v, want giant with ResourcesExceedAllTypes", res.Unschedulable)
	}
	if res.DurationSeconds <= 0 {
		t.Errorf("durationSeconds = %v", res.DurationSeconds)
	}
}

func TestEndToEndStdinAndFormats(t *testing.T) {
	input, err := os.ReadFile(simTestdata + "/golden/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat := simTestdata + "/golden/catalog.json"
	for _, format := range []string{"table", "yaml"} {
		stdout, stderr, code := run(t, string(input), "simulate", "-f", "-", "--instance-types", cat, "-o", format)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, stderr)
		}
		golden, err := os.ReadFile(simTestdata + "/golden/plan." + format)
		if err != nil {
			t.Fatal(err)
		}
		// The solve time differs from the golden's fake clock; the rest
		// must match.
		strip := func(s string) string {
			var out []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.Contains(l, "solve time") && !strings.HasPrefix(l, "durationSeconds") {
					out = append(out, l)
				}
			}
			return strings.Join(out, "\n")
		}
		if strip(stdout) != strip(string(golden)) {
			t.Errorf("%s output differs from the golden file:\n%s", format, stdout)
		}
	}
}

func TestEndToEndExitCodes(t *testing.T) {
	t.Run("bad input is 2 with nothing on stdout", func(t *testing.T) {
		stdout, stderr, code := run(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n---\nkind: Widget\napiVersion: v1\n", "simulate", "-f", "-")
		if code != 2 || stdout != "" {
			t.Fatalf("exit %d stdout %q, want 2 and nothing", code, stdout)
		}
		if !strings.Contains(stderr, "-:5 (document 2, Widget)") || !strings.Contains(stderr, "Unsupported value") {
			t.Errorf("stderr does not locate the problem: %s", stderr)
		}
	})
	t.Run("bad flag is 2", func(t *testing.T) {
		stdout, stderr, code := run(t, "", "simulate", "-f", "x.yaml", "-o", "xml")
		if code != 2 || stdout != "" || !strings.Contains(stderr, `"json", "table", "yaml"`) {
			t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
		}
	})
	t.Run("unschedulable pods still exit 0", func(t *testing.T) {
		_, stderr, code := run(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n", "simulate", "-f", "-", "-o", "json")
		if code != 0 || !strings.Contains(stderr, "1 unschedulable") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("internal error is 1", func(t *testing.T) {
		// stdout is a file opened read-only: writing the plan fails.
		f, err := os.Open(filepath.Join(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command(binary, "simulate", "-f", "-", "--instance-types", simTestdata+"/golden/catalog.json")
		input, _ := os.ReadFile(simTestdata + "/golden/input.yaml")
		cmd.Stdin = bytes.NewReader(input)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = f, &stderr
		err = cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Fatalf("err = %v, want exit 1; stderr %s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "error:") {
			t.Errorf("stderr lacks the error: %s", stderr.String())
		}
	})
}
