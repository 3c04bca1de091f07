package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	"github.com/dovetail-sh/dovetail/pkg/demo"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// DefaultDemoTimeScale is the demo's emulator time scale: instances boot in
// about a tenth of a second and a spot notice lasts 12 s.
const DefaultDemoTimeScale = 0.1

// DemoOptions holds the inputs of `local demo`.
type DemoOptions struct {
	UpOptions
	// ExitWhenDone stops the demo (and the stack) once the scenario has
	// completed, instead of waiting for Ctrl-C.
	ExitWhenDone bool
	// Tick is the view's refresh interval.
	Tick time.Duration
	// StepTimeout bounds each scenario wait.
	StepTimeout time.Duration
	// TTY forces the terminal view on or off; nil detects it from stdout.
	TTY *bool
}

// NewCmdDemo builds `local demo`. runF replaces demoRun in tests; nil runs
// it.
func NewCmdDemo(runF func(context.Context, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{UpOptions: UpOptions{Now: time.Now, Components: defaultComponents()}}
	for _, c := range opts.Components {
		if aws, ok := c.(*localaws.Component); ok {
			aws.TimeScale = DefaultDemoTimeScale
		}
		if ctrl, ok := c.(controllerFlags); ok {
			ctrl.Env = demoControllerEnv(os.Getenv)
		}
	}
	var tty string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the local stack with a sample workload, a scale-up and a spot interruption, and watch it",
		Long: `Start the local stack (as ` + "`local up`" + ` does), then play a short scenario
while drawing a live view of the cluster:

  1. deploy a sample workload in namespace demo: web (arm64, spread over
     zones, with a PodDisruptionBudget), api (amd64) and reports (team B's
     NodePool, through its taint and label);
  2. scale it up;
  3. send a spot interruption for the spot node running the most demo pods
     and watch dovetail replace it;
  4. scale the workload back down and watch consolidation remove nodes, the
     $/h fall and the savings (the demo's controller runs with
     FEATURE_GATES=SpotToSpotConsolidation=true unless FEATURE_GATES is set).

On a terminal the view is redrawn in place: pending and running pods, nodes
by NodePool with instance and capacity types, $/h, charts of $/h and node
count, and the latest events. Without a terminal it prints one line per
tick. Meanwhile, drive the cluster yourself with kubectl (the kubeconfig is
DIR/kubeconfig) and ` + "`dovetail local interrupt|fault`" + `. Ctrl-C stops
everything.

Exit codes: 0 stopped by a signal (or, with --exit-when-done, the scenario
completed), 1 failure, 2 bad flags.`,
		Example: `  dovetail local demo --apply examples/
  dovetail local demo --apply examples/ --time-scale 0.05 --exit-when-done | tee demo.log`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout = cmd.OutOrStdout()
			opts.Stderr = cmd.ErrOrStderr()
			switch tty {
			case "auto":
			case "always", "never":
				v := tty == "always"
				opts.TTY = &v
			default:
				return cmdutil.BadInputf("--tty %q: valid values are always, auto, never", tty)
			}
			for _, c := range opts.Components {
				if nc, ok := c.(interface{ NoController() bool }); ok && nc.NoController() {
					return cmdutil.BadInputf("--controller-replicas 0: the demo needs dovetail's controller (use 'local up --controller-replicas 0' to run another one)")
				}
			}
			if err := componentFlagErrors(opts.Components); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return demoRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", stack.DefaultDir, "directory holding the stack's state, logs and kubeconfig")
	f.StringVar(&opts.ClusterName, "cluster-name", stack.DefaultClusterName, "name of the local cluster (a DNS label)")
	f.StringArrayVar(&opts.Apply, "apply", nil, "manifest file or directory to apply once the stack is up (repeatable); the demo needs the NodePools of examples/")
	f.BoolVar(&opts.ExitWhenDone, "exit-when-done", false, "stop once the scenario has completed")
	f.DurationVar(&opts.Tick, "tick", time.Second, "refresh interval of the view")
	f.DurationVar(&opts.StepTimeout, "step-timeout", 10*time.Minute, "longest wait for one scenario step")
	f.StringVar(&tty, "tty", "auto", "terminal view: always, auto (when stdout is a terminal) or never")
	addComponentFlags(f, opts.Components)
	return cmd
}

// demoControllerEnv is the demo controller's extra environment: the
// SpotToSpotConsolidation gate on, so the spot-first example pools can
// consolidate spot nodes onto cheaper spot nodes in the scale-down step,
// unless FEATURE_GATES is set in the caller's environment (then the
// controller inherits that).
func demoControllerEnv(getenv func(string) string) map[string]string {
	if getenv("FEATURE_GATES") != "" {
		return nil
	}
	return map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=true"}
}

func demoRun(ctx context.Context, opts *DemoOptions) error {
	var aws *localaws.Component
	for _, c := range opts.Components {
		if a, ok := c.(*localaws.Component); ok {
			aws = a
		}
	}
	if aws == nil {
		return errors.New("the demo needs the AWS emulator component")
	}
	sopts := stack.Options{Dir: opts.Dir, ClusterName: opts.ClusterName, Apply: opts.Apply, Components: opts.Components, Progress: opts.Stderr}
	if opts.Dir == "" {
		return cmdutil.BadInputf("--dir: must not be empty")
	}
	if errs := sopts.Validate(); len(errs) > 0 {
		return cmdutil.BadInput(flagErrors(errs))
	}
	begin := opts.Now()
	s, err := stack.Up(ctx, sopts)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(opts.Stderr, "local stack ready in %s; kubectl: export KUBECONFIG=%s\n", opts.Now().Sub(begin).Round(10*time.Millisecond), shellQuote(s.KubeconfigPath()))

	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
	if err != nil {
		return err
	}
	scheme, err := operator.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	tty, width := isTerminal(opts.Stdout)
	if opts.TTY != nil {
		tty = *opts.TTY
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Failed():
			cancel()
		case <-runCtx.Done():
		}
	}()
	err = demo.Run(runCtx, demo.Options{
		Client: c,
		Interrupt: func(_ context.Context, node string) error {
			return aws.Emulator().Interrupt(node, awsemu.KindSpotInterruption)
		},
		Out: opts.Stdout, TTY: tty, Width: width, Tick: opts.Tick,
		ExitWhenDone: opts.ExitWhenDone, StepTimeout: opts.StepTimeout, Now: opts.Now,
	})
	if ferr := s.Err(); ferr != nil {
		return errors.Join(err, ferr)
	}
	return err
}

// isTerminal reports whether w is a terminal, and its width.
func isTerminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return true, 0
	}
	return true, width
}
