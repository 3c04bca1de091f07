package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The conditions the AWS provider's upstream-e2etests target passes to the
// suites (dovetail's AWS repair policies act on both: XID 79 replaces, XID
// 46 reboots).
const (
	repairCondition = "AcceleratedHardwareReady=False/NvidiaXID79Error"
	rebootCondition = "AcceleratedHardwareReady=False/NvidiaXID46Error"
)

// runConfig is what every unit's run needs.
type runConfig struct {
	Binary      string            // the dovetail binary
	Suites      map[string]string // test binary by suite
	NodeClass   string
	NodePool    string
	ClusterName string
	// SchedulerConfig is the suite's kube-scheduler configuration, for
	// the groups in groupSchedulerConfig ("" when none runs).
	SchedulerConfig string
	OutDir          string
	SpecTimeout     time.Duration // ginkgo's --ginkgo.timeout for one unit
	StackTimeout    time.Duration // how long `local up` may take to be ready
	KeepStackData   bool          // keep etcd's data and certificates of each stack
}

// unit is the specs one stack serves: those sharing a source line (one,
// except where a loop makes several specs at the same line).
type unit struct {
	Suite, File string
	Line        int
	Specs       []spec
}

// units groups specs by suite, file and line, keeping their order.
func units(specs []spec) []unit {
	var out []unit
	idx := map[string]int{}
	for _, s := range specs {
		k := fmt.Sprintf("%s %s:%d", s.Suite, s.File, s.Line)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, unit{Suite: s.Suite, File: s.File, Line: s.Line})
		}
		out[i].Specs = append(out[i].Specs, s)
	}
	return out
}

// result is one row of the table.
type result struct {
	Suite, Spec, Group string
	State              string // passed, failed, skipped
	Detail             string // ginkgo's state when it says more (timedout, panicked...), or "stack"
	Seconds            float64
	Failure            string // the first failure line, with its location
	Gates              string
	Expected, Reason   string
	Logs               []string
}

// runUnit starts a stack, runs the unit's specs on it and stops it. The
// stack and the test run in their own process groups; ctx ending stops
// both.
func runUnit(ctx context.Context, cfg runConfig, n int, u unit, progress func(string)) []result {
	dir := filepath.Join(cfg.OutDir, "runs", fmt.Sprintf("%03d-%s-%s-%d", n, u.Suite, strings.TrimSuffix(u.File, "_test.go"), u.Line))
	gates := featureGates(u.Specs[0].Group)
	begin := time.Now()
	fail := func(detail, msg string, logs ...string) []result {
		return unitResults(u, gates, time.Since(begin), stateFailed, detail, msg, logs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("harness", err.Error())
	}
	stackDir := filepath.Join(dir, "stack")
	stackLog := filepath.Join(dir, "stack.log")
	controllerLog := filepath.Join(stackDir, "controller", "replica-0.log")
	testLog := filepath.Join(dir, "test.log")
	logs := []string{rel(cfg.OutDir, testLog), rel(cfg.OutDir, stackLog), rel(cfg.OutDir, controllerLog)}

	st, kubeconfig, err := startStack(ctx, cfg, stackDir, stackLog, gates, awsFeatureGates(u.Specs[0].Group), upFlags(u.Specs[0].Group, cfg.SchedulerConfig))
	if err != nil {
		return fail("stack", err.Error(), logs...)
	}
	defer func() {
		st.stop(graceStack)
		if !cfg.KeepStackData {
			pruneStack(stackDir)
		}
	}()
	progress(fmt.Sprintf("stack ready in %s; running %s", time.Since(begin).Round(time.Second), u.Specs[0].Text))

	report := filepath.Join(dir, "report.json")
	lf, err := os.Create(testLog)
	if err != nil {
		return fail("harness", err.Error(), logs...)
	}
	defer lf.Close()
	cmd := exec.Command(cfg.Suites[u.Suite],
		"-test.v", "-test.count=1",
		"-test.timeout="+(cfg.SpecTimeout+10*time.Minute).String(),
		"-ginkgo.focus-file=/"+regexp.QuoteMeta(u.File)+"$:"+fmt.Sprint(u.Line),
		"-ginkgo.timeout="+cfg.SpecTimeout.String(),
		"-ginkgo.grace-period=2m",
		"-ginkgo.v", "-ginkgo.no-color",
		"-ginkgo.json-report="+report,
		"-default-nodeclass="+cfg.NodeClass,
		"-default-nodepool="+cfg.NodePool,
		"-repair-condition="+repairCondition,
		"-reboot-condition="+rebootCondition,
	)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "OUTPUT_DIR="+dir)
	cmd.Stdout, cmd.Stderr = lf, lf
	tctx, cancel := context.WithTimeout(ctx, cfg.SpecTimeout+5*time.Minute)
	defer cancel()
	testBegin := time.Now()
	g, err := startGroup(cmd)
	if err != nil {
		return fail("harness", err.Error(), logs...)
	}
	runErr := g.wait(tctx, graceTest)
	if ctx.Err() != nil {
		return fail("interrupted", "interrupted (SIGINT/SIGTERM)", logs...)
	}
	b, rerr := os.ReadFile(report)
	if rerr != nil {
		msg := fmt.Sprintf("no ginkgo report (exit %d): %s", exitCode(runErr), lastLine(testLog))
		if errors.Is(runErr, context.DeadlineExceeded) {
			msg = fmt.Sprintf("killed after %s: %s", time.Since(testBegin).Round(time.Second), lastLine(testLog))
		}
		return fail("no-report", msg, logs...)
	}
	reps, err := readAllReports(b)
	if err != nil {
		return fail("no-report", err.Error(), logs...)
	}
	return unitFromReport(u, gates, reps, logs)
}

// unitFromReport makes the unit's rows from ginkgo's report: each spec's
// own state; a suite node's failure (BeforeSuite, AfterSuite) fails the
// specs it stopped.
func unitFromReport(u unit, gates string, reps []specReport, logs []string) []result {
	var suiteFailure *specReport
	for i, r := range reps {
		if r.LeafNodeType != "It" && isFailure(r.State) {
			suiteFailure = &reps[i]
			break
		}
	}
	var out []result
	for _, s := range u.Specs {
		res := result{Suite: s.Suite, Spec: s.Text, Group: s.Group, Gates: gates, Logs: logs, State: stateFailed, Detail: "not-reported",
			Failure: "the spec is not in ginkgo's report"}
		for _, r := range reps {
			if r.LeafNodeType != "It" || r.FullText() != s.Text || filepath.Base(r.LeafNodeLocation.FileName) != s.File || r.LeafNodeLocation.LineNumber != s.Line {
				continue
			}
			res.Seconds = float64(r.RunTime) / 1e9
			res.State, res.Detail = mapState(r.State)
			res.Failure = failureLine(r)
			if res.State == stateSkipped && suiteFailure != nil {
				res.State, res.Detail = stateFailed, strings.ToLower(suiteFailure.LeafNodeType)
				res.Failure = failureLine(*suiteFailure)
			}
			break
		}
		out = append(out, res)
	}
	return out
}

func isFailure(state string) bool {
	switch state {
	case "failed", "panicked", "timedout", "aborted", "interrupted":
		return true
	}
	return false
}

// mapState maps ginkgo's spec state to the table's.
func mapState(s string) (state, detail string) {
	switch s {
	case "passed":
		return statePassed, ""
	case "skipped", "pending":
		return stateSkipped, ""
	case "failed":
		return stateFailed, ""
	}
	return stateFailed, s
}

// failureLine is a spec's failure (or skip) message's first line, after
// the location it was raised at.
func failureLine(r specReport) string {
	msg := strings.TrimSpace(r.Failure.Message)
	if msg == "" {
		return ""
	}
	first := firstLines(msg)
	if l := r.Failure.Location; l.FileName != "" {
		return fmt.Sprintf("%s:%d: %s", filepath.Base(l.FileName), l.LineNumber, first)
	}
	return first
}

// firstLines is a message's first line, joined with the next non-empty
// one when it only introduces it ("Expected success, but got an error:"),
// at most 300 bytes.
func firstLines(msg string) string {
	var keep []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		keep = append(keep, l)
		if !strings.HasSuffix(l, ":") || len(keep) == 2 {
			break
		}
	}
	out := strings.Join(keep, " ")
	if len(out) > 300 {
		out = out[:300] + "..."
	}
	return out
}

func unitResults(u unit, gates string, d time.Duration, state, detail, msg string, logs []string) []result {
	var out []result
	for _, s := range u.Specs {
		first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
		out = append(out, result{Suite: s.Suite, Spec: s.Text, Group: s.Group, Gates: gates, State: state, Detail: detail,
			Seconds: d.Seconds(), Failure: first, Logs: logs})
	}
	return out
}

// readAllReports parses a ginkgo JSON report: every node's report.
func readAllReports(b []byte) ([]specReport, error) {
	var reports []ginkgoReport
	if err := decodeJSON(b, &reports); err != nil {
		return nil, fmt.Errorf("ginkgo JSON report: %w", err)
	}
	var out []specReport
	for _, r := range reports {
		out = append(out, r.SpecReports...)
	}
	return out, nil
}

// startStack starts `dovetail local up` with the extra flags (upFlags) in
// its own process group with FEATURE_GATES set to gates (unset when empty)
// and waits for its ready line, returning the kubeconfig path.
func startStack(ctx context.Context, cfg runConfig, dir, logPath, gates, awsGates string, flags []string) (*group, string, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer lf.Close()
	args := append([]string{"local", "up", "--dir", dir, "--cluster-name", cfg.ClusterName}, flags...)
	cmd := exec.Command(cfg.Binary, args...)
	env := withoutVar(os.Environ(), "FEATURE_GATES")
	env = withoutVar(env, "KUBECONFIG")
	env = withoutVar(env, "AWS_FEATURE_GATES")
	if gates != "" {
		env = append(env, "FEATURE_GATES="+gates)
	}
	if awsGates != "" {
		env = append(env, "AWS_FEATURE_GATES="+awsGates)
	}
	cmd.Env = env
	cmd.Stderr = lf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	g, err := startGroup(cmd)
	if err != nil {
		return nil, "", err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "ready: export KUBECONFIG="); ok {
				ready <- strings.Trim(p, "'")
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case kc := <-ready:
		return g, kc, nil
	case <-g.done:
		g.stop(graceStack)
		return nil, "", fmt.Errorf("local up exited (%d) before ready: %s", exitCode(g.err), lastLine(logPath))
	case <-time.After(cfg.StackTimeout):
		g.stop(graceStack)
		return nil, "", fmt.Errorf("local up not ready after %s: %s", cfg.StackTimeout, lastLine(logPath))
	case <-ctx.Done():
		g.stop(graceStack)
		return nil, "", ctx.Err()
	}
}

// pruneStack removes a stopped stack's bulky state (etcd's data, the
// emulator's and control plane's working files), keeping every log.
func pruneStack(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if d.IsDir() && d.Name() == "etcd" {
			_ = os.RemoveAll(p)
			return filepath.SkipDir
		}
		return nil
	})
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// lastLine is the last non-empty line of a file, for a failure message.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}
