package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseExpectations(t *testing.T) {
	good := "# comment\n\nregression | Integration Daemonsets *  | failed | needs X\ndisruption | Drift should drift | skipped | skips itself\n"
	exps, err := parseExpectations("e.txt", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(exps) != 2 || exps[0].Spec != "Integration Daemonsets *" || exps[0].Line != 3 || exps[1].State != stateSkipped {
		t.Fatalf("parsed %+v", exps)
	}
	for _, tc := range []struct{ in, want string }{
		{"regression | a | failed", "e.txt:1: want 4 fields"},
		{"\nperformance | a | failed | r", "e.txt:2: unknown suite \"performance\""},
		{"regression | a | passed | r", "e.txt:1: state \"passed\""},
		{"regression | * | failed | r", "e.txt:1: empty spec"},
		{"regression | a | failed | ", "e.txt:1: want 4 fields"},
		{"regression | a | failed |  x", ""},
	} {
		_, err := parseExpectations("e.txt", []byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestExpectForLongestMatchAndWordPrefix(t *testing.T) {
	exps, err := parseExpectations("e", []byte(
		"disruption | Drift * | failed | group\n"+
			"disruption | Drift Budgets should respect budgets | skipped | one spec\n"+
			"regression | Drift * | failed | other suite\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    spec
		want string
	}{
		{spec{Suite: "disruption", Text: "Drift Budgets should respect budgets"}, stateSkipped},
		{spec{Suite: "disruption", Text: "Drift Budgets other"}, stateFailed},
		{spec{Suite: "disruption", Text: "Drifting nodes"}, statePassed}, // a prefix ends at a word
		{spec{Suite: "disruption", Text: "Expiration should expire"}, statePassed},
	} {
		if got := expectFor(exps, tc.s).State; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.s.Text, got, tc.want)
		}
	}
	specs := []spec{{Suite: "disruption", Text: "Drift Budgets should respect budgets"}}
	err = checkStale("e", exps, specs, map[string]bool{"disruption": true})
	if err != nil {
		t.Errorf("regression was not listed, disruption lines match: %v", err)
	}
	err = checkStale("e", exps, specs, map[string]bool{"disruption": true, "regression": true})
	if err == nil || !strings.Contains(err.Error(), "e:3: regression \"Drift *\" matches no spec") {
		t.Errorf("stale line not named: %v", err)
	}
}

// A ginkgo JSON report as the suite binaries write it (field names and
// enum strings of ginkgo v2's types.Report).
const sampleReport = `[{"SuiteDescription":"Regression","SpecReports":[
 {"LeafNodeType":"BeforeSuite","State":"passed"},
 {"ContainerHierarchyTexts":["Integration","Daemonsets"],"LeafNodeType":"It","LeafNodeText":"should work",
  "LeafNodeLocation":{"FileName":"/m/sigs.k8s.io/karpenter@v1.15.0/test/suites/regression/integration_test.go","LineNumber":42},
  "State":"timedout","RunTime":61500000000,
  "Failure":{"Message":"A suite timeout occurred\nmore","Location":{"FileName":"/m/x/integration_test.go","LineNumber":50}}},
 {"ContainerHierarchyTexts":["Integration"],"LeafNodeType":"It","LeafNodeText":"other","LeafNodeLocation":{"FileName":"/m/integration_test.go","LineNumber":60},"State":"skipped"},
 {"ContainerHierarchyTexts":["Integration"],"LeafNodeType":"It","LeafNodeText":"passes","LeafNodeLocation":{"FileName":"/m/integration_test.go","LineNumber":70},"State":"passed","RunTime":2000000000}
]}]`

func TestUnitFromReport(t *testing.T) {
	reps, err := readAllReports([]byte(sampleReport))
	if err != nil {
		t.Fatal(err)
	}
	its, err := readReport([]byte(sampleReport))
	if err != nil || len(its) != 3 {
		t.Fatalf("It specs: %d, %v", len(its), err)
	}
	u := unit{Suite: "regression", File: "integration_test.go", Line: 42, Specs: []spec{
		{Suite: "regression", Text: "Integration Daemonsets should work", Group: "Integration", File: "integration_test.go", Line: 42}}}
	res := unitFromReport(u, "", reps, nil)
	if len(res) != 1 || res[0].State != stateFailed || res[0].Detail != "timedout" || res[0].Seconds != 61.5 ||
		res[0].Failure != "integration_test.go:50: A suite timeout occurred" {
		t.Fatalf("got %+v", res)
	}
	u = unit{Suite: "regression", File: "integration_test.go", Line: 70, Specs: []spec{
		{Suite: "regression", Text: "Integration passes", File: "integration_test.go", Line: 70}}}
	if res := unitFromReport(u, "", reps, nil); res[0].State != statePassed || res[0].Seconds != 2 {
		t.Fatalf("got %+v", res)
	}
	// A spec the report lacks fails, saying so.
	u.Specs[0].Line = 71
	if res := unitFromReport(u, "", reps, nil); res[0].State != stateFailed || res[0].Detail != "not-reported" {
		t.Fatalf("got %+v", res)
	}
	// A BeforeSuite failure fails the spec it skipped, with its message.
	bs := strings.Replace(sampleReport, `"LeafNodeType":"BeforeSuite","State":"passed"`,
		`"LeafNodeType":"BeforeSuite","State":"failed","Failure":{"Message":"no kubeconfig"}`, 1)
	reps, err = readAllReports([]byte(bs))
	if err != nil {
		t.Fatal(err)
	}
	u = unit{Suite: "regression", File: "integration_test.go", Line: 60, Specs: []spec{
		{Suite: "regression", Text: "Integration other", File: "integration_test.go", Line: 60}}}
	if res := unitFromReport(u, "", reps, nil); res[0].State != stateFailed || res[0].Detail != "beforesuite" || res[0].Failure != "no kubeconfig" {
		t.Fatalf("got %+v", res)
	}
	if _, err := readAllReports([]byte("{")); err == nil {
		t.Fatal("a broken report is accepted")
	}
}

func TestUnitsGroupBySourceLine(t *testing.T) {
	specs := []spec{
		{Suite: "disruption", Text: "a", File: "drift_test.go", Line: 10},
		{Suite: "disruption", Text: "b", File: "drift_test.go", Line: 10},
		{Suite: "disruption", Text: "c", File: "drift_test.go", Line: 11},
		{Suite: "regression", Text: "d", File: "drift_test.go", Line: 10},
	}
	us := units(specs)
	if len(us) != 3 || len(us[0].Specs) != 2 || us[1].Line != 11 || us[2].Suite != "regression" {
		t.Fatalf("units %+v", us)
	}
}

func TestFeatureGatesPerGroup(t *testing.T) {
	if got := featureGates("StaticCapacity"); got != "StaticCapacity=true" {
		t.Errorf("StaticCapacity: %q", got)
	}
	if got := featureGates("Reboot"); got != "NodeRepair=true" {
		t.Errorf("Reboot: %q", got)
	}
	if got := awsFeatureGates("Reboot"); got != "RebootForRepair=true" {
		t.Errorf("AWS gates for Reboot = %q", got)
	}
	if got := awsFeatureGates("Repair"); got != "" {
		t.Errorf("AWS gates for Repair = %q, want dovetail's defaults", got)
	}
	if got := featureGates("Integration"); got != "" {
		t.Errorf("Integration: %q", got)
	}
}

// The groups' extra `local up` flags: DefaultTopologySpreadConstraints
// places 4 pods one per zone, so its stack gets 4 zones, besides the
// controller stand-in and the suite's kube-scheduler configuration.
func TestUpFlagsPerGroup(t *testing.T) {
	for _, tc := range []struct {
		group, schedulerConfig string
		want                   []string
	}{
		{"DefaultTopologySpreadConstraints", "/w/kube-scheduler-config.yaml", []string{
			"--controller-deployment", "kube-system/karpenter", "--scheduler-config", "/w/kube-scheduler-config.yaml", "--zones", "4"}},
		{"DefaultTopologySpreadConstraints", "", []string{"--controller-deployment", "kube-system/karpenter", "--zones", "4"}},
		{"TerminateFirst", "/w/kube-scheduler-config.yaml", []string{"--controller-deployment", "kube-system/karpenter"}},
		{"Expiration", "/w/kube-scheduler-config.yaml", nil},
	} {
		if got := upFlags(tc.group, tc.schedulerConfig); !slices.Equal(got, tc.want) {
			t.Errorf("upFlags(%q, %q) = %q, want %q", tc.group, tc.schedulerConfig, got, tc.want)
		}
	}
}

func TestSubstituteClusterName(t *testing.T) {
	in := "role: KarpenterNodeRole-$CLUSTER_NAME\ntags: {karpenter.sh/discovery: ${CLUSTER_NAME}}\n"
	want := "role: KarpenterNodeRole-local\ntags: {karpenter.sh/discovery: local}\n"
	if got := substituteClusterName(in, "local"); got != want {
		t.Fatalf("got %q", got)
	}
}

// The harness stops a whole process group: a grandchild the leader started
// is gone too, and a context's end stops a running group.
func TestGroupStopKillsGrandchildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", "sleep 300 & echo $! > "+pidFile+"; trap '' TERM; wait")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- runGroup(ctx, cmd, time.Second) }()
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the grandchild's pid never appeared")
	}
	cancel()
	select {
	case err := <-errc:
		if err != context.Canceled {
			t.Fatalf("runGroup: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runGroup did not return after its context ended")
	}
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("grandchild %d still running", pid)
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestTableCountsAndSummary(t *testing.T) {
	tb := &table{Wall: 90 * time.Second, Results: []result{
		{State: statePassed, Expected: statePassed},
		{State: stateFailed, Expected: stateFailed},
		{State: stateSkipped, Expected: stateSkipped},
		{State: stateFailed, Expected: statePassed, Spec: "a | b"},
	}}
	if got, want := tb.summary(), "1 passed, 2 failed (1 skipped); 1 differ from the expectations; wall 1m30s"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	var sb strings.Builder
	tb.writeMarkdown(&sb)
	if !strings.Contains(sb.String(), `a \| b`) || !strings.Contains(sb.String(), "**passed** (differs)") {
		t.Fatalf("table:\n%s", sb.String())
	}
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-suites", "performance", "-list"}, "unknown suite \"performance\""},
		{[]string{"-focus", "(", "-list"}, "-focus:"},
		{[]string{"-binary", "/nonexistent/dovetail"}, "-binary /nonexistent/dovetail"},
		{[]string{"-spec-timeout", "0", "-list"}, "must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var out, errb strings.Builder
		if code := run(tc.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// The checked-in expectations file parses.
func TestExpectationsFileParses(t *testing.T) {
	b, err := os.ReadFile("expectations.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseExpectations("expectations.txt", b); err != nil {
		t.Fatal(err)
	}
}

func TestResumeKeepsRowsAndSkipsDoneSpecs(t *testing.T) {
	dir := t.TempDir()
	prev := &table{Wall: time.Minute, Results: []result{
		{Suite: "disruption", Spec: "Drift a", State: statePassed, Expected: statePassed},
		{Suite: "disruption", Spec: "Drift b", State: stateFailed, Detail: "interrupted", Expected: statePassed},
	}}
	if err := prev.save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := loadTable(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 2 || got.Results[0].Spec != "Drift a" || got.Wall != time.Minute {
		t.Fatalf("loaded %+v", got)
	}
	specs := []spec{{Suite: "disruption", Text: "Drift a"}, {Suite: "regression", Text: "Drift a"}, {Suite: "disruption", Text: "Drift c"}}
	left := withoutDone(specs, got)
	if len(left) != 2 || left[0].Suite != "regression" || left[1].Text != "Drift c" {
		t.Fatalf("left %+v", left)
	}
	if _, err := loadTable(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("a missing results.json is accepted")
	}
}

func TestFirstLines(t *testing.T) {
	for in, want := range map[string]string{
		"Timed out after 900s.\nExpected x":                                "Timed out after 900s.",
		"Expected success, but got an error:\n\n    <*errors.StatusError>": "Expected success, but got an error: <*errors.StatusError>",
		"a:\nb:\nc":                      "a: b:",
		strings.Repeat("x", 400) + "\ny": strings.Repeat("x", 300) + "...",
	} {
		if got := firstLines(in); got != want {
			t.Errorf("firstLines(%q) = %q, want %q", in, got, want)
		}
	}
}
