package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dovetail-sh/dovetail/internal/peermodule"
)

// The peer's core module, whose suites run here, and the release dovetail
// follows (the AWS provider v1.15.2 requires it).
const (
	coreModule  = "sigs.k8s.io/karpenter"
	coreVersion = "v1.15.0"
)

// suitePackages are the suites this harness runs, by short name.
var suitePackages = map[string]string{
	"regression": coreModule + "/test/suites/regression",
	"disruption": coreModule + "/test/suites/disruption",
}

// scratchGoMod is the scratch module's go.mod before `go get` fills it.
const scratchGoMod = "module dovetail.local/upstreamsuites\n\ngo 1.26\n"

// buildSuites makes (or reuses) the scratch module in dir and the test
// binary of each suite, returning their paths by suite name. The peer's
// module asks for a newer Go than may be installed: the go commands run
// with GOTOOLCHAIN=auto, which fetches that toolchain through the module
// proxy. Output of the go commands goes to log.
func buildSuites(ctx context.Context, dir string, suites []string, rebuild bool, log io.Writer, progress func(string)) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bins := map[string]string{}
	var missing []string
	for _, s := range suites {
		bins[s] = filepath.Join(dir, s+".test")
		if _, err := os.Stat(bins[s]); err != nil || rebuild {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		progress("suites: reusing " + strings.Join(suites, ", ") + " binaries in " + dir)
		return bins, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(scratchGoMod), 0o644); err != nil {
			return nil, err
		}
	}
	progress(fmt.Sprintf("suites: go get %s@%s in %s (GOTOOLCHAIN=auto)", coreModule, coreVersion, dir))
	if err := goCmd(ctx, dir, log, "get", coreModule+"@"+coreVersion); err != nil {
		return nil, err
	}
	for _, s := range missing {
		progress(fmt.Sprintf("suites: go test -c %s (minutes on a cold build cache; log %s)", suitePackages[s], logName(log)))
		tmp := bins[s] + ".tmp"
		if err := goCmd(ctx, dir, log, "test", "-c", "-o", tmp, suitePackages[s]); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, bins[s]); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

func logName(w io.Writer) string {
	if f, ok := w.(*os.File); ok {
		return f.Name()
	}
	return "(memory)"
}

// goCmd runs one go command in the scratch module, in its own process
// group (killed when ctx ends).
func goCmd(ctx context.Context, dir string, log io.Writer, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=auto", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = log, log
	if err := runGroup(ctx, cmd, graceBuild); err != nil {
		return fmt.Errorf("go %s (in %s): %w", strings.Join(args, " "), dir, err)
	}
	return nil
}

// defaultsDir is where the AWS provider's default EC2NodeClass and NodePool
// land (the files its upstream-e2etests target passes to the suites).
const (
	defaultNodeClassFile = "default_ec2nodeclass.yaml"
	defaultNodePoolFile  = "default_nodepool.yaml"
)

// fetchDefaults writes the AWS provider's default EC2NodeClass (with
// $CLUSTER_NAME replaced by clusterName, as its Makefile's envsubst does)
// and NodePool into dir, returning their paths.
func fetchDefaults(dir, clusterName string) (nodeClass, nodePool string, err error) {
	files, err := peermodule.Files(dir, "test/pkg/environment/aws/")
	if err != nil {
		return "", "", err
	}
	nc, ok1 := files[defaultNodeClassFile]
	np, ok2 := files[defaultNodePoolFile]
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("%s@%s: test/pkg/environment/aws lacks %s or %s", peermodule.Module, peermodule.Version, defaultNodeClassFile, defaultNodePoolFile)
	}
	nc = []byte(substituteClusterName(string(nc), clusterName))
	nodeClass = filepath.Join(dir, defaultNodeClassFile)
	nodePool = filepath.Join(dir, defaultNodePoolFile)
	if err := os.WriteFile(nodeClass, nc, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(nodePool, np, 0o644); err != nil {
		return "", "", err
	}
	return nodeClass, nodePool, nil
}

// schedulerConfigFile is the regression suite's kube-scheduler
// configuration (a profile with PodTopologySpread defaults), which the
// peer's kind cluster hands its kube-scheduler and the
// DefaultTopologySpreadConstraints specs read back.
const schedulerConfigFile = "test/suites/regression/testdata/kube-scheduler-config.yaml"

// fetchSchedulerConfig copies the suite's kube-scheduler configuration out
// of the peer's module (in the scratch module's module cache) into dir.
func fetchSchedulerConfig(ctx context.Context, work, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=auto", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/karpenter in %s: %w", work, err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), schedulerConfigFile))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kube-scheduler-config.yaml")
	return path, os.WriteFile(path, b, 0o644)
}

// substituteClusterName replaces $CLUSTER_NAME and ${CLUSTER_NAME}, the
// only variable the provider's envsubst fills.
func substituteClusterName(s, name string) string {
	return strings.NewReplacer("${CLUSTER_NAME}", name, "$CLUSTER_NAME", name).Replace(s)
}

// ginkgoReport is the part of ginkgo's JSON report (--ginkgo.json-report)
// the harness reads: one element per suite.
type ginkgoReport struct {
	SuiteDescription string
	SpecReports      []specReport
}

type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	LeafNodeLocation        codeLocation
	State                   string
	RunTime                 int64 // nanoseconds
	Failure                 struct {
		Message  string
		Location codeLocation
	}
}

type codeLocation struct {
	FileName   string
	LineNumber int
}

// FullText is the spec's name: its containers' texts and its own.
func (r specReport) FullText() string {
	return strings.Join(append(append([]string(nil), r.ContainerHierarchyTexts...), r.LeafNodeText), " ")
}

// spec is one spec of a suite, as the dry run lists it.
type spec struct {
	Suite string
	Text  string // containers and leaf, space-separated
	Group string // the outermost container: gates and expectations key on it
	File  string // base name of the leaf's file
	Line  int
}

// readReport parses a ginkgo JSON report and returns its It specs.
func readReport(b []byte) ([]specReport, error) {
	all, err := readAllReports(b)
	if err != nil {
		return nil, err
	}
	var out []specReport
	for _, s := range all {
		if s.LeafNodeType == "It" {
			out = append(out, s)
		}
	}
	return out, nil
}

var decodeJSON = json.Unmarshal

// listSpecs runs the suite binary with --ginkgo.dry-run (nothing runs, not
// even BeforeSuite) and returns its specs in source order.
func listSpecs(ctx context.Context, suite, bin, workDir string) ([]spec, error) {
	report := filepath.Join(workDir, suite+"-specs.json")
	cmd := exec.Command(bin, "-ginkgo.dry-run", "-ginkgo.json-report="+report, "-ginkgo.no-color")
	cmd.Dir = workDir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := runGroup(ctx, cmd, graceTest); err != nil {
		return nil, fmt.Errorf("%s --ginkgo.dry-run: %w\n%s", bin, err, tail(out.String(), 20))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	reps, err := readReport(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", report, err)
	}
	specs := make([]spec, 0, len(reps))
	for _, r := range reps {
		group := r.LeafNodeText
		if len(r.ContainerHierarchyTexts) > 0 {
			group = r.ContainerHierarchyTexts[0]
		}
		specs = append(specs, spec{Suite: suite, Text: r.FullText(), Group: group,
			File: filepath.Base(r.LeafNodeLocation.FileName), Line: r.LeafNodeLocation.LineNumber})
	}
	sort.SliceStable(specs, func(i, j int) bool {
		if specs[i].File != specs[j].File {
			return specs[i].File < specs[j].File
		}
		return specs[i].Line < specs[j].Line
	})
	return specs, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
