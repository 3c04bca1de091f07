package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

type config struct {
	binary, out, work, suites, focus, skip, expectations, clusterName string
	specTimeout, stackTimeout                                         time.Duration
	rebuild, list, keepStackData, resume                              bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.binary, "binary", "bin/dovetail", "the dovetail binary whose `local up` serves each spec")
	fs.StringVar(&cfg.out, "out", "bin/upstream-results", "results directory: results.md, results.json, runs/<n>/ logs")
	fs.StringVar(&cfg.work, "work", "", "scratch module of the suites (default $DOVETAIL_CACHE_DIR or the user cache dir + /dovetail/upstream/karpenter-"+coreVersion+")")
	fs.StringVar(&cfg.suites, "suites", "regression,disruption", "suites to run, comma-separated")
	fs.StringVar(&cfg.focus, "focus", "", "run only specs whose full text matches this regular expression")
	fs.StringVar(&cfg.skip, "skip", "", "do not run specs whose full text matches this regular expression")
	fs.StringVar(&cfg.expectations, "expectations", "test/upstream/expectations.txt", "the expectations file: every spec that does not pass here, with its reason")
	fs.StringVar(&cfg.clusterName, "cluster-name", "local", "the local cluster's name ($CLUSTER_NAME of the default EC2NodeClass)")
	fs.DurationVar(&cfg.specTimeout, "spec-timeout", 20*time.Minute, "ginkgo's timeout for one spec (the suites' Eventually default is 15m)")
	fs.DurationVar(&cfg.stackTimeout, "stack-timeout", 5*time.Minute, "how long `local up` may take to be ready")
	fs.BoolVar(&cfg.rebuild, "rebuild", false, "rebuild the suites' test binaries")
	fs.BoolVar(&cfg.list, "list", false, "list the selected specs with their gates and expectations; run nothing")
	fs.BoolVar(&cfg.resume, "resume", false, "keep the rows of -out's results.json and run only the selected specs it lacks (to continue an interrupted run, or add specs to one table)")
	fs.BoolVar(&cfg.keepStackData, "keep-stack-data", false, "keep each stack's etcd data (logs are always kept)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "upstream: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	suites, focus, skip, err := cfg.validate()
	if err != nil {
		fmt.Fprintf(stderr, "upstream: %v\n", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	begin := time.Now()
	progress := func(s string) { fmt.Fprintf(stderr, "%s upstream: %s\n", time.Now().UTC().Format("15:04:05"), s) }

	expBytes, err := os.ReadFile(cfg.expectations)
	if err != nil {
		fmt.Fprintf(stderr, "upstream: -expectations: %v\n", err)
		return exitUsage
	}
	exps, err := parseExpectations(cfg.expectations, expBytes)
	if err != nil {
		fmt.Fprintf(stderr, "upstream: %v\n", err)
		return exitUsage
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		fmt.Fprintf(stderr, "upstream: -out: %v\n", err)
		return exitFailed
	}
	buildLog, err := os.Create(filepath.Join(cfg.out, "build.log"))
	if err != nil {
		fmt.Fprintf(stderr, "upstream: %v\n", err)
		return exitFailed
	}
	defer buildLog.Close()
	bins, err := buildSuites(ctx, cfg.work, suites, cfg.rebuild, buildLog, progress)
	if err != nil {
		return failOrInterrupted(ctx, stderr, err)
	}
	var all []spec
	listed := map[string]bool{}
	for _, s := range suites {
		specs, err := listSpecs(ctx, s, bins[s], cfg.work)
		if err != nil {
			return failOrInterrupted(ctx, stderr, err)
		}
		progress(fmt.Sprintf("%s: %d specs", s, len(specs)))
		all = append(all, specs...)
		listed[s] = true
	}
	if err := checkStale(cfg.expectations, exps, all, listed); err != nil {
		fmt.Fprintf(stderr, "upstream: stale expectations:\n%v\n", err)
		return exitFailed
	}
	var selected []spec
	for _, s := range all {
		if (focus == nil || focus.MatchString(s.Text)) && (skip == nil || !skip.MatchString(s.Text)) {
			selected = append(selected, s)
		}
	}
	if cfg.list {
		for _, s := range selected {
			e := expectFor(exps, s)
			fmt.Fprintf(stdout, "%s\t%s:%d\t%s\t%s\t%s\n", s.Suite, s.File, s.Line, s.Text, e.State, featureGates(s.Group))
		}
		fmt.Fprintf(stdout, "%d specs\n", len(selected))
		return exitOK
	}
	if len(selected) == 0 {
		fmt.Fprintln(stderr, "upstream: no spec matches -focus/-skip")
		return exitUsage
	}
	workDefaults := filepath.Join(cfg.out, "defaults")
	if err := os.MkdirAll(workDefaults, 0o755); err != nil {
		fmt.Fprintf(stderr, "upstream: %v\n", err)
		return exitFailed
	}
	nodeClass, nodePool, err := fetchDefaults(workDefaults, cfg.clusterName)
	if err != nil {
		return failOrInterrupted(ctx, stderr, err)
	}
	schedulerConfig := ""
	for _, sp := range selected {
		if groupSchedulerConfig[sp.Group] {
			if schedulerConfig, err = fetchSchedulerConfig(ctx, cfg.work, workDefaults); err != nil {
				return failOrInterrupted(ctx, stderr, err)
			}
			break
		}
	}
	rc := runConfig{Binary: cfg.binary, Suites: bins, NodeClass: nodeClass, NodePool: nodePool, ClusterName: cfg.clusterName, SchedulerConfig: schedulerConfig,
		OutDir: cfg.out, SpecTimeout: cfg.specTimeout, StackTimeout: cfg.stackTimeout, KeepStackData: cfg.keepStackData}
	t := &table{Started: begin}
	if cfg.resume {
		prev, err := loadTable(filepath.Join(cfg.out, "results.json"))
		if err != nil {
			fmt.Fprintf(stderr, "upstream: -resume: %v\n", err)
			return exitUsage
		}
		t = prev
		t.Results = slices.DeleteFunc(t.Results, func(r result) bool { return r.Detail == "interrupted" })
		begin = time.Now().Add(-t.Wall)
		selected = withoutDone(selected, t)
		progress(fmt.Sprintf("resuming: %d specs already in the table, %d to run", len(t.Results), len(selected)))
	}
	us := units(selected)
	// Run directories are numbered on from those of earlier runs in -out.
	prevRuns, _ := os.ReadDir(filepath.Join(cfg.out, "runs"))
	progress(fmt.Sprintf("%d specs in %d runs, one fresh stack each, one at a time; results in %s", len(selected), len(us), filepath.Join(cfg.out, "results.md")))
	for i, u := range us {
		if ctx.Err() != nil {
			break
		}
		progress(fmt.Sprintf("[%d/%d] %s: %s (gates: %s)", i+1, len(us), u.Suite, u.Specs[0].Text, orDefault(featureGates(u.Specs[0].Group))))
		res := runWithHeartbeat(ctx, rc, len(prevRuns)+i+1, u, progress)
		for _, r := range res {
			e := expectFor(exps, spec{Suite: r.Suite, Text: r.Spec})
			r.Expected, r.Reason = e.State, e.Reason
			t.Results = append(t.Results, r)
			mark := "as expected"
			if r.State != r.Expected {
				mark = "EXPECTED " + r.Expected
			}
			progress(fmt.Sprintf("    %s in %.0fs (%s) %s", r.State, r.Seconds, mark, r.Failure))
		}
		t.Wall = time.Since(begin)
		if err := t.save(cfg.out); err != nil {
			fmt.Fprintf(stderr, "upstream: %v\n", err)
		}
		passed, failed, skipped, unexpected := t.counts()
		progress(fmt.Sprintf("so far: %d passed, %d failed, %d skipped, %d unexpected; %s elapsed", passed, failed, skipped, unexpected, t.Wall.Round(time.Second)))
	}
	t.Wall = time.Since(begin)
	if err := t.save(cfg.out); err != nil {
		fmt.Fprintf(stderr, "upstream: %v\n", err)
	}
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(cfg.out, "results.md"))
	for _, r := range t.Results {
		if r.State != r.Expected {
			fmt.Fprintf(stdout, "DIFFERS %s: %s: %s, expected %s: %s\n", r.Suite, r.Spec, r.State, r.Expected, r.Failure)
		}
	}
	fmt.Fprintln(stdout, t.summary())
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "upstream: interrupted; every stack was stopped")
		return exitInterrupted
	}
	if _, _, _, u := t.counts(); u > 0 {
		return exitFailed
	}
	return exitOK
}

// runWithHeartbeat runs one unit, printing a line each minute it runs.
func runWithHeartbeat(ctx context.Context, rc runConfig, n int, u unit, progress func(string)) []result {
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		tk := time.NewTicker(time.Minute)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				progress(fmt.Sprintf("    ... %s so far", time.Since(begin).Round(time.Second)))
			}
		}
	}()
	defer close(done)
	return runUnit(ctx, rc, n, u, progress)
}

func orDefault(gates string) string {
	if gates == "" {
		return "defaults"
	}
	return gates
}

func failOrInterrupted(ctx context.Context, stderr io.Writer, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "upstream: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "upstream: %v\n", err)
	return exitFailed
}

func (c *config) validate() (suites []string, focus, skip *regexp.Regexp, err error) {
	for _, s := range strings.Split(c.suites, ",") {
		s = strings.TrimSpace(s)
		if _, ok := suitePackages[s]; !ok {
			return nil, nil, nil, fmt.Errorf("-suites: unknown suite %q (want regression, disruption)", s)
		}
		if !slices.Contains(suites, s) {
			suites = append(suites, s)
		}
	}
	if c.focus != "" {
		if focus, err = regexp.Compile(c.focus); err != nil {
			return nil, nil, nil, fmt.Errorf("-focus: %w", err)
		}
	}
	if c.skip != "" {
		if skip, err = regexp.Compile(c.skip); err != nil {
			return nil, nil, nil, fmt.Errorf("-skip: %w", err)
		}
	}
	if c.specTimeout <= 0 || c.stackTimeout <= 0 {
		return nil, nil, nil, fmt.Errorf("-spec-timeout and -stack-timeout must be positive")
	}
	if c.clusterName == "" {
		return nil, nil, nil, fmt.Errorf("-cluster-name: must not be empty")
	}
	if !c.list {
		fi, err := os.Stat(c.binary)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("-binary %s: %w (run `make build` first)", c.binary, err)
		}
		if fi.IsDir() {
			return nil, nil, nil, fmt.Errorf("-binary %s: is a directory", c.binary)
		}
	}
	for _, p := range []*string{&c.binary, &c.out} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, nil, nil, err
		}
	}
	if c.work == "" {
		root := os.Getenv("DOVETAIL_CACHE_DIR")
		if root == "" {
			uc, err := os.UserCacheDir()
			if err != nil {
				return nil, nil, nil, fmt.Errorf("-work: no cache dir: %w", err)
			}
			root = filepath.Join(uc, "dovetail")
		}
		c.work = filepath.Join(root, "upstream", "karpenter-"+coreVersion)
	}
	if c.work, err = filepath.Abs(c.work); err != nil {
		return nil, nil, nil, err
	}
	return suites, focus, skip, nil
}
