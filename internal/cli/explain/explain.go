package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/clusterdump"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	pkgexplain "github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
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
	Output     string

	Kind string // "pod" or "nodeclaim"
	Ref  string

	Stdout, Stderr io.Writer
	// Client replaces the client built from the kubeconfig (tests).
	Client client.Reader
}

// NewCmd builds `dovetail explain` with its pod, nodeclaim and node
// subcommands. runF replaces Run in tests; nil runs it.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "explain pod NS/NAME | nodeclaim NAME",
		Short: "Explain why a pod is pending or where it went, and why a NodeClaim has its instance type",
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

Instance types come from the built-in catalog of --region (default: the
nodes' topology.kubernetes.io/region, else us-east-1), in the zones of the
EC2NodeClasses' subnets. Exit codes: 0 explained, 1 cluster error, 2 bad
input (a reference not found, named; flags; files).`,
		Example: `  dovetail explain pod shop/cart-7f9
  dovetail explain nodeclaim default-x8k2p -o json
  dovetail explain pod default/web-0 -f cluster.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&opts.Kubeconfig, "kubeconfig", "", cmdutil.KubeconfigFlagUsage)
	pf.StringVar(&opts.Context, "context", "", "kubeconfig context (default: the current context)")
	pf.StringArrayVarP(&opts.Files, "filename", "f", nil, "simulate input (file, directory or -) instead of the live cluster (repeatable)")
	pf.StringVar(&opts.Region, "region", "", "region of the built-in catalog (default: the nodes' region label, else us-east-1)")
	pf.StringVarP(&opts.Output, "output", "o", FormatText, "output format: text|json|yaml")
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
	cmd.AddCommand(sub("pod", "pod NS/NAME", "Why a pod is pending, or where it went and who placed it"),
		sub("nodeclaim", "nodeclaim NAME", "Why a NodeClaim has its instance type, and what cheaper offerings were not taken"),
		&cobra.Command{
			Use: "node NAME", Short: "Why a node is kept (not supported yet)", SilenceUsage: true, SilenceErrors: true,
			RunE: func(*cobra.Command, []string) error {
				return errors.New("explain node is not supported yet: it needs the disruption planner's reasons, which dovetail does not have yet")
			},
		})
	return cmd
}

// Run loads the input and prints the explanation.
func Run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var ref engine.PodRef
	if opts.Kind == "pod" {
		ns, name, ok := strings.Cut(opts.Ref, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return cmdutil.BadInputf("pod %q: want NAMESPACE/NAME", opts.Ref)
		}
		ref = engine.PodRef{Namespace: ns, Name: name}
	}
	in, err := Load(ctx, opts, ref)
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
	_, err = opts.Stdout.Write(buf.Bytes())
	return err
}

func notFound(err error, where string) error {
	var nf *pkgexplain.NotFoundError
	if errors.As(err, &nf) {
		return cmdutil.BadInputf("%s %s: not found in %s", nf.Kind, nf.Name, where)
	}
	return err
}

// Input is what an explanation is computed from.
type Input struct {
	Cluster     *snapshot.Cluster
	Engine      *engine.Input
	Nominations []pkgexplain.Nomination
	Region      string
	Where       string // "the cluster at https://..." or "the files a.yaml, b.yaml"
}

// Load reads the live cluster, or the -f files, and builds the engine's
// input. For a pod reference it also reads the Nominated events of the
// pod's namespace (live only).
func Load(ctx context.Context, opts *Options, pod engine.PodRef) (*Input, error) {
	out := &Input{}
	if len(opts.Files) > 0 {
		m := &simulate.Manifests{}
		var errs simulate.InputErrors
		for _, f := range opts.Files {
			files, err := readInputs(f)
			if err != nil {
				return nil, err
			}
			for _, in := range files {
				if err := m.Read(in.name, in.data); err != nil {
					var ies simulate.InputErrors
					if errors.As(err, &ies) {
						errs = append(errs, ies...)
						continue
					}
					return nil, err
				}
			}
		}
		if len(errs) > 0 {
			return nil, cmdutil.BadInput(errs)
		}
		c, warnings, err := m.Cluster()
		if err != nil {
			return nil, cmdutil.BadInput(err)
		}
		for _, w := range warnings {
			fmt.Fprintln(opts.Stderr, "warning:", w)
		}
		out.Cluster = c
		out.Where = "the files " + strings.Join(opts.Files, ", ")
	} else {
		c := opts.Client
		host := "the cluster"
		if c == nil {
			cfg, err := cmdutil.RESTConfig(opts.Kubeconfig, opts.Context)
			if err != nil {
				return nil, err
			}
			cl, err := cmdutil.Client(cfg)
			if err != nil {
				return nil, err
			}
			c, host = cl, "the cluster at "+cfg.Host
		}
		d, err := clusterdump.Read(ctx, c, clusterdump.Options{})
		if err != nil {
			return nil, err
		}
		out.Cluster = d.Cluster()
		out.Where = host
		if pod.Name != "" {
			noms, err := nominations(ctx, c, pod.Namespace)
			if err != nil {
				return nil, err
			}
			out.Nominations = noms
		}
	}
	out.Region = opts.Region
	if out.Region == "" {
		out.Region = "us-east-1"
		for _, n := range out.Cluster.Nodes {
			if r := n.Labels[corev1.LabelTopologyRegion]; r != "" {
				out.Region = r
				break
			}
		}
	}
	cat := catalog.Builtin()
	if !slices.Contains(cat.Regions(), out.Region) {
		return nil, cmdutil.BadInputf("--region: %q is not a region of the built-in catalog", out.Region)
	}
	var zones []string
	for _, nc := range out.Cluster.NodeClasses {
		for _, s := range nc.Status.Subnets {
			if !slices.Contains(zones, s.Zone) {
				zones = append(zones, s.Zone)
			}
		}
	}
	if len(zones) == 0 {
		for _, z := range cat.DefaultZones(out.Region) {
			zones = append(zones, z.Name)
		}
	}
	in, err := snapshot.Build(out.Cluster, snapshot.NewCatalogSource(cat, out.Region, zones), snapshot.Options{Region: out.Region})
	if err != nil {
		return nil, cmdutil.BadInputf("%s: %v", out.Where, err)
	}
	out.Engine = in
	return out, nil
}

// nominations reads the provisioner's Nominated events of a namespace.
func nominations(ctx context.Context, c client.Reader, ns string) ([]pkgexplain.Nomination, error) {
	var out []pkgexplain.Nomination
	token := ""
	for {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.Limit(500), client.Continue(token)); err != nil {
			return nil, fmt.Errorf("listing the events of namespace %s: %w", ns, err)
		}
		slices.SortStableFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
		for _, e := range list.Items {
			if e.Reason != "Nominated" || e.Regarding.Kind != "Pod" {
				continue
			}
			n := pkgexplain.Nomination{Pod: engine.PodRef{Namespace: e.Regarding.Namespace, Name: e.Regarding.Name}}
			switch {
			case strings.HasPrefix(e.Note, "Pod should schedule on NodeClaim "):
				n.Target, n.NodeClaim = firstWord(strings.TrimPrefix(e.Note, "Pod should schedule on NodeClaim ")), true
			case strings.HasPrefix(e.Note, "Pod fits on existing node "):
				n.Target = firstWord(strings.TrimPrefix(e.Note, "Pod fits on existing node "))
			default:
				continue
			}
			out = append(out, n)
		}
		token = list.Continue
		if token == "" {
			return out, nil
		}
	}
}

func firstWord(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " ,"); i >= 0 {
		return s[:i]
	}
	return s
}

type input struct {
	name string
	data []byte
}

func readInputs(f string) ([]input, error) {
	if f == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return []input{{"-", data}}, nil
	}
	st, err := os.Stat(f)
	if err != nil {
		return nil, cmdutil.BadInputf("-f %s: %v", f, err)
	}
	if !st.IsDir() {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, cmdutil.BadInputf("-f %s: %v", f, err)
		}
		return []input{{f, data}}, nil
	}
	entries, err := os.ReadDir(f)
	if err != nil {
		return nil, cmdutil.BadInputf("-f %s: %v", f, err)
	}
	var out []input
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json")) {
			continue
		}
		data, err := os.ReadFile(f + "/" + n)
		if err != nil {
			return nil, cmdutil.BadInputf("-f %s/%s: %v", f, n, err)
		}
		out = append(out, input{f + "/" + n, data})
	}
	if len(out) == 0 {
		return nil, cmdutil.BadInputf("-f %s: the directory has no *.yaml, *.yml or *.json files", f)
	}
	return out, nil
}
