package top

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/fleet"
)

// Options holds the inputs of `dovetail top` and its dependencies.
type Options struct {
	Kubeconfig, Context string
	Interval            time.Duration
	Plain               bool // no screen redraws, even on a terminal
	Watch               bool // with plain output, print every Interval
	Region              string

	Stdout, Stderr io.Writer
	Clock          clock.Clock
	// TTY overrides the terminal detection of Stdout (tests); nil detects.
	TTY    *bool
	Width  int
	Client client.Reader
}

// NewCmd builds `dovetail top`. runF replaces Run in tests; nil runs it.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:   "top [--interval 2s] [--plain [--watch]]",
		Short: "A live view of the cluster's nodes: pool, instance type, capacity type, $/h, cpu and memory requested",
		Long: `Read the cluster of the kubeconfig (read-only) and show every node and
launching NodeClaim: pool, instance type, capacity type, zone, $/h (the
price recorded at launch, or the built-in catalog's, marked *), cpu and
memory requests against allocatable as bars; totals and $/h on top.

On a terminal the screen is redrawn every --interval until Ctrl-C. With
--plain, or when stdout is not a terminal, the table is printed once
(--watch: every --interval). Works on any cluster: nodes without a
NodeClaim are priced by their well-known labels.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if opts.Interval < 100*time.Millisecond {
				return cmdutil.BadInputf("--interval %s: must be at least 100ms", opts.Interval)
			}
			if opts.Watch && !opts.Plain {
				return cmdutil.BadInputf("--watch goes with --plain (on a terminal the screen already refreshes)")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", cmdutil.KubeconfigFlagUsage)
	f.StringVar(&opts.Context, "context", "", "kubeconfig context (default: the current context)")
	f.DurationVar(&opts.Interval, "interval", 2*time.Second, "refresh interval")
	f.BoolVar(&opts.Plain, "plain", false, "plain text: print the table once, no screen control")
	f.BoolVar(&opts.Watch, "watch", false, "with --plain: print the table every --interval until Ctrl-C")
	f.StringVar(&opts.Region, "region", "", "region of the built-in catalog (default: the nodes' region label, else us-east-1)")
	return cmd
}

// Run shows the view until ctx ends (screen or --watch) or once.
func Run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c := opts.Client
	if c == nil {
		cfg, err := cmdutil.RESTConfig(opts.Kubeconfig, opts.Context)
		if err != nil {
			return err
		}
		cl, err := cmdutil.Client(cfg)
		if err != nil {
			return err
		}
		c = cl
	}
	tty, width := false, opts.Width
	if opts.TTY != nil {
		tty = *opts.TTY
	} else if f, ok := opts.Stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = w
		}
	}
	screen := tty && !opts.Plain
	cat := catalog.Builtin()
	for {
		rows, err := Read(ctx, c, cat, opts.Region)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends the view
			}
			return err
		}
		if _, err := io.WriteString(opts.Stdout, fleet.Table(rows, opts.Clock.Now(), width, screen)); err != nil {
			return err
		}
		if !screen && !opts.Watch {
			return nil
		}
		if !screen {
			fmt.Fprintln(opts.Stdout)
		}
		t := opts.Clock.NewTimer(opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Read lists nodes, NodeClaims and pods (paged) and builds the rows.
func Read(ctx context.Context, c client.Reader, cat *catalog.Catalog, region string) ([]fleet.Node, error) {
	in := fleet.Input{Catalog: cat, Region: region}
	err := listAll(ctx, c, func() *corev1.NodeList { return &corev1.NodeList{} }, func(l *corev1.NodeList) { in.Nodes = appendPtrs(in.Nodes, l.Items) })
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	err = listAll(ctx, c, func() *karpv1.NodeClaimList { return &karpv1.NodeClaimList{} }, func(l *karpv1.NodeClaimList) { in.NodeClaims = appendPtrs(in.NodeClaims, l.Items) })
	if err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) { // no CRD: a cluster without dovetail or the peer
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	err = listAll(ctx, c, func() *corev1.PodList { return &corev1.PodList{} }, func(l *corev1.PodList) { in.Pods = appendPtrs(in.Pods, l.Items) })
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	if in.Region == "" {
		in.Region = "us-east-1"
		for _, n := range in.Nodes {
			if r := n.Labels[corev1.LabelTopologyRegion]; r != "" {
				in.Region = r
				break
			}
		}
	}
	return fleet.Build(in), nil
}

func appendPtrs[T any](dst []*T, items []T) []*T {
	for i := range items {
		dst = append(dst, &items[i])
	}
	return dst
}

// listAll pages through a kind, 500 objects a request, each page decoded
// into a new list (the rows keep pointers into it).
func listAll[L client.ObjectList](ctx context.Context, c client.Reader, newList func() L, took func(L)) error {
	token := ""
	for {
		list := newList()
		if err := c.List(ctx, list, client.Limit(500), client.Continue(token)); err != nil {
			return err
		}
		took(list)
		token = list.GetContinue()
		if token == "" {
			return nil
		}
	}
}
