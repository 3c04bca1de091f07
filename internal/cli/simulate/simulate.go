package simulate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// BuiltinCatalog is the --instance-types value that selects the built-in
// EC2 catalog.
const BuiltinCatalog = "builtin"

// Options holds the inputs of `dovetail simulate` and its dependencies.
type Options struct {
	Files         []string
	InstanceTypes string
	Region        string
	Zones         []string
	Output        string
	// Disruption plans a disruption pass over the cluster in the files
	// instead of provisioning; At (--now, RFC 3339) is the time it is for,
	// "" the wall clock.
	Disruption bool
	At         string
	// SpotToSpot is the planner's SpotToSpotConsolidation gate.
	SpotToSpot bool
	// MinSavings and MinSavingsPerPod are the controller's consolidation
	// savings threshold (--consolidation-min-savings[-per-pod]), for pools
	// without their own annotations.
	MinSavings, MinSavingsPerPod float64
	// MaxPods bounds the pods the input may make (--max-pods).
	MaxPods int
	// MaxNodePools bounds the input's NodePools (--max-nodepools).
	MaxNodePools int
	// SchedulerConfig is the file of --scheduler-config: the controller's
	// SCHEDULER_CONFIG document, whose default spreads the input's pods
	// without their own get ("" none).
	SchedulerConfig string

	Stdin  io.Reader
	Stdout io.Writer // the plan
	Stderr io.Writer // notices and warnings
	Now    func() time.Time
	// ReadFile and ReadDir read the inputs (ReadFileLimited, os.ReadDir).
	ReadFile func(string) ([]byte, error)
	ReadDir  func(string) ([]os.DirEntry, error)
	Stat     func(string) (os.FileInfo, error)
}

// NewCmd builds `dovetail simulate`. runF replaces Run in tests; nil runs
// it.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Now: time.Now, ReadFile: ReadFileLimited, ReadDir: os.ReadDir, Stat: os.Stat}
	cmd := &cobra.Command{
		Use:           "simulate -f FILE [-f FILE ...]",
		SilenceUsage:  true,
		SilenceErrors: true,
		Short:         "Plan the nodes dovetail would launch for the pods in manifest files",
		Long: `Read NodePools, EC2NodeClasses, workloads and (optionally) existing nodes
from manifest files, run the scheduling engine once, and print the plan: the
NodeClaims it would launch (the cheapest available offering of each, and
every instance type that would do), the pods it would put on existing
nodes, the pods it cannot place with the reason, the total price per hour
and the engine's lower bound on it.

--disruption reads a cluster instead (Nodes with their pods bound by
spec.nodeName, NodeClaims, NodePools, EC2NodeClasses, PodDisruptionBudgets;
what 'dovetail snapshot' writes) and prints what dovetail would remove or
replace now: the commands in order, the reason every other node is kept,
the fleet's price per hour before and after, and the lower bound. --now
RFC3339 fixes the time the plan is for (consolidateAfter, budget
schedules, do-not-disrupt durations); the default is the wall clock.

Accepted kinds: ` + strings.Join(simulate.Kinds(), ", ") + `.
Workloads become pods named <owner>-<n>; pods with spec.nodeName are bound
to the Node of that name. -f - reads stdin; -f DIR reads DIR's *.yaml,
*.yml and *.json files in name order.

--instance-types PATH reads a catalog file instead of the built-in EC2
catalog (see docs/simulate.md for its format).

The plan goes to stdout; notices and warnings to stderr.
Exit codes: 0 a plan was made (even with unschedulable pods), 1 internal
error, 2 bad input (flags, files, documents); nothing is printed to stdout
on bad input.`,
		Example: `  dovetail simulate -f examples/
  dovetail simulate -f nodepools.yaml -f workload.yaml -o json
  kubectl get deploy -o yaml | dovetail simulate -f pools.yaml -f -
  dovetail simulate -f pools.yaml -f pods.yaml --region eu-west-1 --zones eu-west-1a,eu-west-1b
  dovetail simulate --disruption -f cluster.yaml --now 2026-12-01T10:00:00Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.BadInputf("unexpected arguments %q: pass manifest files with -f\nSee '%s --help'", args, cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdin = cmd.InOrStdin()
			opts.Stdout = cmd.OutOrStdout()
			opts.Stderr = cmd.ErrOrStderr()
			if len(opts.Files) == 0 {
				return cmdutil.BadInputf("no input: pass at least one -f FILE (or -f - for stdin)\nSee '%s --help'", cmd.CommandPath())
			}
			if fe := simulate.ValidateFormat(opts.Output); fe != nil {
				return cmdutil.BadInputf("-o: %s", fe.ErrorBody())
			}
			if opts.MaxPods < 1 {
				return cmdutil.BadInputf("--max-pods: %d: must be at least 1", opts.MaxPods)
			}
			if opts.MaxNodePools < 1 {
				return cmdutil.BadInputf("--max-nodepools: %d: must be at least 1", opts.MaxNodePools)
			}
			if cmd.Flags().Changed("spot-to-spot-consolidation") && !opts.Disruption {
				return cmdutil.BadInputf("--spot-to-spot-consolidation applies only with --disruption")
			}
			for _, name := range []string{"consolidation-min-savings", "consolidation-min-savings-per-pod"} {
				if !cmd.Flags().Changed(name) {
					continue
				}
				if !opts.Disruption {
					return cmdutil.BadInputf("--%s applies only with --disruption", name)
				}
				if v, _ := cmd.Flags().GetFloat64(name); !(v >= 0) || math.IsInf(v, 0) {
					return cmdutil.BadInputf("--%s: %g: must be a non-negative number of $/h (0: off)", name, v)
				}
			}
			if cmd.Flags().Changed("now") {
				if !opts.Disruption {
					return cmdutil.BadInputf("--now applies only with --disruption")
				}
				if _, err := time.Parse(time.RFC3339, opts.At); err != nil {
					return cmdutil.BadInputf("--now: %q is not an RFC 3339 time (2026-12-01T10:00:00Z)", opts.At)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&opts.Files, "filename", "f", nil, "manifest file, directory, or - for stdin (repeatable)")
	f.StringVar(&opts.InstanceTypes, "instance-types", BuiltinCatalog, "instance types: "+BuiltinCatalog+" (the EC2 catalog) or the path of a catalog file")
	f.StringVar(&opts.Region, "region", "us-east-1", "AWS region of the built-in catalog and of new nodes")
	f.StringSliceVar(&opts.Zones, "zones", nil, "zones to plan in (default: the region's first three zones for the built-in catalog, every zone of a catalog file)")
	f.StringVarP(&opts.Output, "output", "o", simulate.FormatTable, "output format: "+strings.Join(simulate.Formats(), "|"))
	f.BoolVar(&opts.Disruption, "disruption", false, "plan a disruption pass over the cluster in the files: what dovetail would remove or replace, and why it keeps each other node")
	f.BoolVar(&opts.SpotToSpot, "spot-to-spot-consolidation", false, "with --disruption: allow replacing spot nodes with cheaper spot nodes (the SpotToSpotConsolidation gate)")
	f.Float64Var(&opts.MinSavings, "consolidation-min-savings", 0, "with --disruption: least $/h a consolidation command must save, as the controller's flag (0: off); a NodePool's dovetail.sh/consolidation-min-savings annotation overrides it")
	f.Float64Var(&opts.MinSavingsPerPod, "consolidation-min-savings-per-pod", 0, "with --disruption: least $/h a consolidation must save per evicted pod (0: off); overridden by dovetail.sh/consolidation-min-savings-per-pod")
	f.IntVar(&opts.MaxNodePools, "max-nodepools", simulate.DefaultMaxNodePools, "refuse inputs with more NodePools than this, checked before any is compiled")
	f.IntVar(&opts.MaxPods, "max-pods", simulate.DefaultMaxPods, "refuse inputs that make more pods than this (listed pods, replicas, DaemonSet pods), checked before any is made")
	f.StringVar(&opts.SchedulerConfig, "scheduler-config", "", "file of the controller's SCHEDULER_CONFIG ({podTopologySpread: {defaultConstraints: [...]}}): pods without their own topology spread get these, with the selector deduced from the input's Services and the pod's controller")
	f.StringVar(&opts.At, "now", "", "with --disruption: the time the plan is for, RFC 3339 (default: the wall clock)")
	return cmd
}

// Run reads the inputs, simulates, and prints the plan. Reading and
// solving stop when ctx is done (the binary's SIGINT/SIGTERM context): Run
// then returns an error wrapping ctx's cause and prints nothing on stdout.
// The abandoned read or solve finishes in the background (a blocked read
// of a FIFO or a terminal never does); the process exits without waiting.
func Run(ctx context.Context, opts *Options) error {
	if err := ctx.Err(); err != nil {
		return interrupted(ctx)
	}
	type outcome struct {
		out []byte
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var buf bytes.Buffer
		err := run(opts, &buf)
		done <- outcome{buf.Bytes(), err}
	}()
	select {
	case <-ctx.Done():
		return interrupted(ctx)
	case o := <-done:
		if o.err != nil {
			return o.err
		}
		if ctx.Err() != nil {
			return interrupted(ctx)
		}
		_, err := opts.Stdout.Write(o.out)
		return err
	}
}

// interrupted is the error of a run stopped by ctx.
func interrupted(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause != nil && !errors.Is(cause, ctx.Err()) {
		return fmt.Errorf("simulate interrupted (%v), nothing printed: %w", cause, ctx.Err())
	}
	return fmt.Errorf("simulate interrupted, nothing printed: %w", ctx.Err())
}

// run does the work of Run, rendering the plan into out.
func run(opts *Options, out *bytes.Buffer) error {
	for _, z := range opts.Zones {
		if strings.TrimSpace(z) == "" {
			return cmdutil.BadInputf("--zones: an empty zone name in %q (a comma-separated list of zones, e.g. us-east-1a,us-east-1b)", strings.Join(opts.Zones, ","))
		}
	}
	spreads, err := cmdutil.SchedulerConfigFile(opts.ReadFile, opts.SchedulerConfig)
	if err != nil {
		return err
	}
	m := &simulate.Manifests{}
	files, err := opts.inputs()
	if err != nil {
		return err
	}
	var readErrs simulate.InputErrors
	docs := 0
	for _, in := range files {
		if err := m.Read(in.name, in.data); err != nil {
			var ies simulate.InputErrors
			if errors.As(err, &ies) {
				readErrs = append(readErrs, ies...)
				continue
			}
			return err
		}
		docs++
	}
	if len(readErrs) > 0 {
		return cmdutil.BadInput(readErrs)
	}

	sopts := simulate.Options{Region: opts.Region, Zones: opts.Zones, Now: opts.Now, MaxPods: opts.MaxPods, MaxNodePools: opts.MaxNodePools,
		SpreadDefaults: spreads}
	if opts.InstanceTypes != BuiltinCatalog {
		data, err := opts.ReadFile(opts.InstanceTypes)
		if err != nil {
			return cmdutil.BadInputf("--instance-types: %v", err)
		}
		types, err := simulate.ReadCatalog(opts.InstanceTypes, data, nil)
		if err != nil {
			return cmdutil.BadInput(err)
		}
		if len(opts.Zones) > 0 {
			known := map[string]bool{}
			var names []string
			for _, it := range types {
				for _, o := range it.Offerings {
					if !known[o.Zone] {
						names = append(names, o.Zone)
					}
					known[o.Zone] = true
				}
			}
			slices.Sort(names)
			for _, z := range opts.Zones {
				if !known[z] {
					return cmdutil.BadInputf("--zones: %q is not a zone of %s (its zones: %s)", z, opts.InstanceTypes, strings.Join(names, ", "))
				}
			}
			if types, err = simulate.ReadCatalog(opts.InstanceTypes, data, opts.Zones); err != nil {
				return cmdutil.BadInput(err)
			}
		}
		sopts.InstanceTypes = types
	} else {
		cat := catalog.Builtin()
		if !slices.Contains(cat.Regions(), opts.Region) || len(cat.DefaultZones(opts.Region)) == 0 {
			return cmdutil.BadInputf("--region: %q has no zones in the built-in catalog; known regions: %s", opts.Region, strings.Join(regionsWithZones(cat), ", "))
		}
		for _, z := range opts.Zones {
			if len(cat.OfferedTypes(opts.Region, z)) == 0 {
				var names []string
				for _, dz := range cat.DefaultZones(opts.Region) {
					names = append(names, dz.Name)
				}
				return cmdutil.BadInputf("--zones: %q is not a zone of %s in the built-in catalog (its default zones: %s)", z, opts.Region, strings.Join(names, ", "))
			}
		}
		sopts.Catalog = cat
	}
	if m.Objects() == 0 {
		names := make([]string, len(files))
		for i, in := range files {
			names[i] = in.name
		}
		return cmdutil.BadInputf("the input is empty: %s has no objects (NodePools, pods, workloads, ...)", strings.Join(names, ", "))
	}
	if opts.Disruption {
		sopts.SpotToSpotConsolidation = opts.SpotToSpot
		sopts.MinSavings = disruption.MinSavings{PerCommand: opts.MinSavings, PerPod: opts.MinSavingsPerPod}
		return runDisruption(m, sopts, opts, len(files), out)
	}
	fmt.Fprintf(opts.Stderr, "simulate: read %d input(s); solving...\n", len(files))
	res, err := simulate.Run(m, sopts)
	if err != nil {
		if errors.Is(err, simulate.ErrBadInput) {
			return cmdutil.BadInput(err)
		}
		return err
	}
	for _, w := range res.Warnings {
		cmdutil.Warn(opts.Stderr, w)
	}
	fmt.Fprintf(opts.Stderr, "simulate: %d pods: %d on new nodes, %d on existing nodes, %d unschedulable (%d classes, solved in %.3fs)\n",
		res.Stats.Pods, res.Stats.PlacedNew, res.Stats.PlacedExisting, res.Stats.Unschedulable, res.Stats.Classes, res.DurationSeconds)
	// Render into a buffer so that a failure leaves stdout untouched.
	if err := simulate.Render(out, res, opts.Output); err != nil {
		return fmt.Errorf("rendering the plan: %w", err)
	}
	return nil
}

// runDisruption plans a disruption pass and prints it.
func runDisruption(m *simulate.Manifests, sopts simulate.Options, opts *Options, inputs int, out *bytes.Buffer) error {
	at := opts.Now()
	if opts.At != "" {
		t, err := time.Parse(time.RFC3339, opts.At)
		if err != nil {
			return cmdutil.BadInputf("--now: %q is not an RFC 3339 time (2026-12-01T10:00:00Z)", opts.At)
		}
		at = t
	}
	fmt.Fprintf(opts.Stderr, "simulate: read %d input(s); planning disruption at %s...\n", inputs, at.UTC().Format(time.RFC3339))
	res, err := simulate.RunDisruption(m, sopts, at)
	if err != nil {
		if errors.Is(err, simulate.ErrBadInput) {
			return cmdutil.BadInput(err)
		}
		return err
	}
	for _, w := range res.Warnings {
		cmdutil.Warn(opts.Stderr, w)
	}
	fmt.Fprintf(opts.Stderr, "simulate: %d nodes: %d commands, %d kept (%d candidates, %d what-ifs, planned in %.3fs)\n",
		len(res.Nodes), len(res.Commands), len(res.Kept), res.Stats.Candidates, res.Stats.WhatIfs, res.DurationSeconds)
	if err := simulate.RenderDisruption(out, res, opts.Output); err != nil {
		return fmt.Errorf("rendering the plan: %w", err)
	}
	return nil
}

func regionsWithZones(cat *catalog.Catalog) []string {
	var out []string
	for _, r := range cat.Regions() {
		if len(cat.DefaultZones(r)) > 0 {
			out = append(out, r)
		}
	}
	return out
}

type input struct {
	name string
	data []byte
}

// inputs resolves -f values: "-" is stdin (at most once), a directory its
// *.yaml, *.yml and *.json files in name order, anything else a file.
func (opts *Options) inputs() ([]input, error) {
	var out []input
	stdinUsed := false
	for _, f := range opts.Files {
		if f == "-" {
			if stdinUsed {
				return nil, cmdutil.BadInputf("-f -: stdin can be read only once")
			}
			stdinUsed = true
			data, err := readLimited(opts.Stdin, MaxInputBytes)
			if errors.Is(err, errTooLarge) {
				return nil, cmdutil.BadInputf("-f -: %v", err)
			}
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			out = append(out, input{name: "-", data: data})
			continue
		}
		st, err := opts.Stat(f)
		if err != nil {
			return nil, cmdutil.BadInputf("-f %s: %v", f, unwrapPathError(err))
		}
		if !st.IsDir() {
			data, err := opts.ReadFile(f)
			if err != nil {
				return nil, cmdutil.BadInputf("-f %s: %v", f, unwrapPathError(err))
			}
			out = append(out, input{name: f, data: data})
			continue
		}
		entries, err := opts.ReadDir(f)
		if err != nil {
			return nil, cmdutil.BadInputf("-f %s: %v", f, unwrapPathError(err))
		}
		n := 0
		for _, e := range entries { // os.ReadDir sorts by name
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			p := filepath.Join(f, e.Name())
			data, err := opts.ReadFile(p)
			if err != nil {
				return nil, cmdutil.BadInputf("-f %s: %v", p, unwrapPathError(err))
			}
			out = append(out, input{name: p, data: data})
			n++
		}
		if n == 0 {
			return nil, cmdutil.BadInputf("-f %s: the directory has no *.yaml, *.yml or *.json files", f)
		}
	}
	return out, nil
}

// MaxInputBytes bounds each input file (and stdin): a larger one is bad
// input, read no further.
const MaxInputBytes = 256 << 20

var errTooLarge = fmt.Errorf("larger than %d MiB, the limit of an input", MaxInputBytes>>20)

// ReadFileLimited reads a file of at most MaxInputBytes (a device or FIFO
// too: it stops reading at the limit).
func ReadFileLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, MaxInputBytes)
}

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
