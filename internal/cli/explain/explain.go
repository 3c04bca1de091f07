package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/internal/cli/clusterinput"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	pkgexplain "github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// Output formats.
const (
	FormatText = "text"
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// Options holds the inputs of `dovetail explain` and its dependencies.
type Options struct {
	Kubeconfig string
	Context    string
	Files      []string // -f: simulate input instead of the live cluster
	Region     string   // "" detects it from the nodes
	Namespace  string   // the controller's: its published unavailable offerings
	Output     string

	Kind string // "pod", "nodeclaim" or "node"
	Ref  string
	// At is --now (node only): RFC 3339; "" means Now.
	At string
	// NodeRepair is --node-repair (node only): plan as a controller with
	// the NodeRepair feature gate on.
	NodeRepair bool
	// SchedulerConfig is --scheduler-config: the file of the controller's
	// SCHEDULER_CONFIG, whose default spreads the -f input's pods get.
	SchedulerConfig string
	Now             func() time.Time

	Stdout, Stderr io.Writer
	// Client replaces the client built from the kubeconfig (tests).
	Client client.Reader
}

// NewCmd builds `dovetail explain` with its pod, nodeclaim and node
// subcommands. runF replaces Run in tests; nil runs it.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "explain pod NS/NAME | nodeclaim NAME | node NAME",
		Short: "Explain why a pod is pending or where it went, why a NodeClaim has its instance type, and why a node is kept",
		Long: `Read the cluster of the kubeconfig (read-only) or simulate input (-f) and
explain:

  pod NS/NAME      for a pending pod, what dovetail would do with it and, per
                   existing node and per NodePool, the first rule that keeps
                   it out, with counts across instance types, and what would
                   make it schedulable; for a bound pod, its node, NodeClaim,
                   the plan the controller recorded and whether
                   kube-scheduler followed it.
  nodeclaim NAME   the instance types it could launch as, the offering it
                   launched on with its $/h, and every cheaper offering of
                   its pool with the reason it was not taken.
  node NAME        the disruption planner's answer for the node now: the
                   command that removes it, or the code and reason it is
                   kept (do-not-disrupt pod, PDB, budget, consolidateAfter
                   left, no cheaper placement, spot-to-spot rule,
                   nominated, unhealthy and when it is repaired, ...), and
                   what removing it alone would save.

Instance types come from the built-in catalog of --region (default: the
nodes' topology.kubernetes.io/region, else us-east-1), in the zones of the
EC2NodeClasses' subnets. Exit codes: 0 explained, 1 cluster error, 2 bad
input (a reference not found, named; flags; files).`,
		Example: `  dovetail explain pod shop/cart-7f9
  dovetail explain nodeclaim default-x8k2p -o json
  dovetail explain pod default/web-0 -f cluster.yaml
  dovetail explain node ip-10-0-1-7.ec2.internal --now 2026-12-01T10:00:00Z -f cluster.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&opts.Kubeconfig, "kubeconfig", "", cmdutil.KubeconfigFlagUsage)
	pf.StringVar(&opts.Context, "context", "", "kubeconfig context (default: the current context)")
	pf.StringArrayVarP(&opts.Files, "filename", "f", nil, "simulate input (file, directory or -) instead of the live cluster (repeatable)")
	pf.StringVar(&opts.Region, "region", "", "region of the built-in catalog (default: the nodes' region label, else us-east-1)")
	pf.StringVarP(&opts.Output, "output", "o", FormatText, "output format: text|json|yaml")
	pf.StringVar(&opts.SchedulerConfig, "scheduler-config", "", "with -f: file of the controller's SCHEDULER_CONFIG ({podTopologySpread: {defaultConstraints: [...]}}); pods without their own topology spread get these, the selector deduced from the input's Services and controllers")
	pf.StringVar(&opts.Namespace, "namespace", "kube-system", "the controller's namespace, where it publishes the offerings it holds unavailable")
	sub := func(kind, use, short string) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, SilenceUsage: true, SilenceErrors: true,
			Args: func(c *cobra.Command, args []string) error {
				if len(args) != 1 {
					return cmdutil.BadInputf("%s: want exactly one %s, got %d arguments\nSee '%s --help'", c.CommandPath(), strings.Fields(use)[1], len(args), c.CommandPath())
				}
				return nil
			},
			RunE: func(c *cobra.Command, args []string) error {
				opts.Stdout, opts.Stderr = c.OutOrStdout(), c.ErrOrStderr()
				opts.Kind, opts.Ref = kind, args[0]
				if !slices.Contains([]string{FormatText, FormatJSON, FormatYAML}, opts.Output) {
					return cmdutil.BadInputf("-o: %q is not one of text, json, yaml", opts.Output)
				}
				if runF != nil {
					return runF(c.Context(), opts)
				}
				return Run(c.Context(), opts)
			},
		}
	}
	node := sub("node", "node NAME", "Why a node is kept (the disruption planner's reason), or which command removes it, and what removing it would save")
	node.Flags().StringVar(&opts.At, "now", "", "the time to plan for, RFC 3339 (default: the wall clock)")
	node.Flags().BoolVar(&opts.NodeRepair, "node-repair", false, "plan as a controller with the NodeRepair feature gate on: unhealthy nodes past their toleration are repaired (off: reported NodeRepairDisabled)")
	cmd.AddCommand(sub("pod", "pod NS/NAME", "Why a pod is pending, or where it went and who placed it"),
		sub("nodeclaim", "nodeclaim NAME", "Why a NodeClaim has its instance type, and what cheaper offerings were not taken"),
		node)
	return cmd
}

// Run loads the input and prints the explanation.
func Run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.SchedulerConfig != "" && len(opts.Files) == 0 {
		return cmdutil.BadInputf("--scheduler-config needs -f: the live cluster's Services and controllers are not read for it yet")
	}
	spreads, err := cmdutil.SchedulerConfigFile(os.ReadFile, opts.SchedulerConfig)
	if err != nil {
		return err
	}
	if opts.Kind == "node" {
		return runNode(ctx, opts, spreads)
	}
	var ref engine.PodRef
	if opts.Kind == "pod" {
		ns, name, ok := strings.Cut(opts.Ref, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return cmdutil.BadInputf("pod %q: want NAMESPACE/NAME", opts.Ref)
		}
		ref = engine.PodRef{Namespace: ns, Name: name}
	}
	in, err := clusterinput.Load(ctx, clusterinput.Source{Kubeconfig: opts.Kubeconfig, Context: opts.Context, Files: opts.Files,
		Region: opts.Region, Namespace: opts.Namespace, Stderr: opts.Stderr, Client: opts.Client, SpreadDefaults: spreads}, ref)
	if err != nil {
		return err
	}
	var result interface{ WriteText(io.Writer) error }
	switch opts.Kind {
	case "pod":
		r, err := pkgexplain.ExplainPod(in.Engine, in.Cluster.Pods, in.Cluster.NodeClaims, in.Nominations, ref)
		if err != nil {
			return notFound(err, in.Where)
		}
		result = r
	case "nodeclaim":
		r, err := pkgexplain.ExplainNodeClaim(in.Engine, in.Cluster.NodeClaims, opts.Ref)
		if err != nil {
			return notFound(err, in.Where)
		}
		result = r
	default:
		return cmdutil.BadInputf("explain %s: unknown kind", opts.Kind)
	}
	return render(opts, result)
}

// runNode explains a node with the disruption planner.
func runNode(ctx context.Context, opts *Options, spreads []corev1.TopologySpreadConstraint) error {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	at := now()
	if opts.At != "" {
		t, err := time.Parse(time.RFC3339, opts.At)
		if err != nil {
			return cmdutil.BadInputf("--now: %q is not an RFC 3339 time (2026-12-01T10:00:00Z)", opts.At)
		}
		at = t
	}
	m, where, err := clusterinput.Manifests(ctx, clusterinput.Source{Kubeconfig: opts.Kubeconfig, Context: opts.Context, Files: opts.Files,
		Stderr: opts.Stderr, Client: opts.Client})
	if err != nil {
		return err
	}
	in, warnings, err := simulate.DisruptionInput(m, simulate.Options{Region: clusterinput.RegionOf(opts.Region, m.Nodes), NodeRepair: opts.NodeRepair,
		SpreadDefaults: spreads}, at)
	if err != nil {
		if errors.Is(err, simulate.ErrBadInput) {
			return cmdutil.BadInput(err)
		}
		var ies simulate.InputErrors
		if errors.As(err, &ies) {
			return cmdutil.BadInput(err)
		}
		return err
	}
	for _, w := range warnings {
		cmdutil.Warn(opts.Stderr, w)
	}
	r, err := pkgexplain.ExplainNode(in, opts.Ref)
	if err != nil {
		return notFound(err, where)
	}
	return render(opts, r)
}

func render(opts *Options, result interface{ WriteText(io.Writer) error }) error {
	var buf bytes.Buffer
	switch opts.Output {
	case FormatJSON:
		data, err := json.MarshalIndent(result, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(append(data, '\n'))
	case FormatYAML:
		data, err := yaml.Marshal(result)
		if err != nil {
			return err
		}
		buf.Write(data)
	default:
		if err := result.WriteText(&buf); err != nil {
			return err
		}
	}
	_, err := opts.Stdout.Write(buf.Bytes())
	return err
}

func notFound(err error, where string) error {
	var nf *pkgexplain.NotFoundError
	if errors.As(err, &nf) {
		return cmdutil.BadInputf("%s %s: not found in %s", nf.Kind, nf.Name, where)
	}
	return err
}
