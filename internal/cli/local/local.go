package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

// NewCmd returns the `local` command group.
func NewCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the whole dovetail stack on this machine",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(NewCmdUp(nil), NewCmdDemo(nil), NewCmdFault(nil), NewCmdInterrupt(nil), NewCmdPublishImage(nil))
	return cmd
}

// UpOptions holds the inputs of `local up`.
type UpOptions struct {
	Dir         string
	ClusterName string
	Apply       []string
	// SchedulerConfig is --scheduler-config: a KubeSchedulerConfiguration
	// file for the stack's kube-scheduler ("" the built-in one).
	SchedulerConfig string

	// Components are started after the control plane (the AWS emulator
	// and the controller register here as they land).
	Components []stack.Component

	Stdout io.Writer // the ready line
	Stderr io.Writer // progress
	Now    func() time.Time
}

// NewCmdUp builds `local up`. runF replaces upRun in tests; nil runs it.
func NewCmdUp(runF func(context.Context, *UpOptions) error) *cobra.Command {
	opts := &UpOptions{Now: time.Now, Components: defaultComponents()}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local control plane with dovetail's CRDs and keep it running",
		Long: `Start a local Kubernetes control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, and kwok playing the kubelet of
every node) with dovetail's CRDs installed, and keep it running until
interrupted (SIGINT or SIGTERM), then stop everything.

Once everything is up, one line goes to stdout:

  ready: export KUBECONFIG=<absolute path of DIR/kubeconfig>

Progress goes to stderr. A directory holds one stack at a time; a directory
left by a killed stack is taken over and started afresh.

Exit codes: 0 stopped by a signal, 1 failure (including DIR in use),
2 bad flags or arguments.`,
		Example: `  dovetail local up
  dovetail local up --dir /tmp/stack --cluster-name dev --apply examples/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout = cmd.OutOrStdout()
			opts.Stderr = cmd.ErrOrStderr()
			if err := componentFlagErrors(opts.Components); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return upRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", stack.DefaultDir, "directory holding the stack's state, logs and kubeconfig")
	f.StringVar(&opts.ClusterName, "cluster-name", stack.DefaultClusterName, "name of the local cluster (a DNS label)")
	f.StringArrayVar(&opts.Apply, "apply", nil, "manifest file or directory to apply once the stack is up (repeatable)")
	f.StringVar(&opts.SchedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file for the stack's kube-scheduler (e.g. a profile with PodTopologySpread defaultConstraints); the stack then shows kube-system/kube-scheduler-"+stack.SystemNodeName+" naming "+stack.SchedulerConfigPath+", as a kind cluster does")
	addComponentFlags(f, opts.Components)
	return cmd
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cmdutil.BadInputf("%s takes no arguments, got %q\nSee '%s --help'", cmd.CommandPath(), args, cmd.CommandPath())
	}
	return nil
}

// flagOf maps the fields of stack.Options to the flags that set them.
var flagOf = map[string]string{"dir": "--dir", "clusterName": "--cluster-name", "apply": "--apply", "schedulerConfig": "--scheduler-config"}

func upRun(ctx context.Context, opts *UpOptions) error {
	sopts := stack.Options{
		Dir:             opts.Dir,
		ClusterName:     opts.ClusterName,
		Apply:           opts.Apply,
		Components:      opts.Components,
		SchedulerConfig: opts.SchedulerConfig,
		Progress:        opts.Stderr,
	}
	if opts.Dir == "" {
		return cmdutil.BadInputf("--dir: must not be empty")
	}
	if errs := sopts.Validate(); len(errs) > 0 {
		return cmdutil.BadInput(flagErrors(errs))
	}
	begin := opts.Now()
	err := stack.Run(ctx, sopts, func(s *stack.Stack) {
		fmt.Fprintf(opts.Stderr, "local stack ready in %s\n", opts.Now().Sub(begin).Round(10*time.Millisecond))
		fmt.Fprintf(opts.Stdout, "ready: export KUBECONFIG=%s\n", shellQuote(s.KubeconfigPath()))
	})
	var inUse *controlplane.DirInUseError
	if errors.As(err, &inUse) {
		holder := "another process"
		if inUse.PID > 0 {
			holder = fmt.Sprintf("process %d", inUse.PID)
		}
		return fmt.Errorf("%s is in use by %s (a running `dovetail local up`); stop it or choose another --dir", inUse.Dir, holder)
	}
	return err
}

// flagErrors rewrites validation errors in terms of flags.
func flagErrors(errs field.ErrorList) error {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		name := e.Field
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		flag := flagOf[name]
		if flag == "" {
			flag = e.Field
		}
		msgs = append(msgs, fmt.Sprintf("%s %v: %s", flag, e.BadValue, e.Detail))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
