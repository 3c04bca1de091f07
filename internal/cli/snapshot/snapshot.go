package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/version"
	"github.com/dovetail-sh/dovetail/pkg/clusterdump"
)

// Options holds the inputs of `dovetail snapshot` and its dependencies.
type Options struct {
	Kubeconfig string
	Context    string
	Output     string // "" or "-": stdout
	PageSize   int64

	Stdout io.Writer
	Stderr io.Writer
	Now    func() time.Time
	// Client replaces the client built from the kubeconfig (tests).
	Client client.Reader
}

// NewCmd builds `dovetail snapshot`. runF replaces Run in tests; nil runs
// it.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Now: time.Now}
	cmd := &cobra.Command{
		Use:           "snapshot [--kubeconfig FILE] [-o FILE]",
		Short:         "Write a live cluster, read-only, as `dovetail simulate` input",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `Read the cluster of the kubeconfig (list requests only, paged with
--page-size) and write it as one multi-document YAML file that
` + "`dovetail simulate -f`" + ` accepts: NodePools, EC2NodeClasses, NodeClaims,
Nodes, DaemonSets, PodDisruptionBudgets, StorageClasses, PersistentVolumes,
PersistentVolumeClaims, Namespaces and the running and pending Pods with
their owner references. Deployments, ReplicaSets, StatefulSets and Jobs are
not written: simulate would create their pods a second time.

Of each pod only what scheduling needs is kept (requests, labels, affinity,
tolerations, topology spread, node selector, volumes that constrain
placement, priority, overhead, status phase): never images, env, command,
args, secret or configmap references, or image pull secrets. EC2NodeClasses
are written without userData. Kinds the cluster does not serve (no
Karpenter CRDs on a Cluster Autoscaler cluster) are skipped with a notice.

Progress goes to stderr; the file is written only when the whole read
succeeded. Exit codes: 0 written, 1 cluster or write error (or
interrupted), 2 bad input (flags, a missing kubeconfig).`,
		Example: `  dovetail snapshot -o cluster.yaml
  dovetail simulate -f cluster.yaml
  dovetail snapshot --kubeconfig ~/.kube/prod --context prod | dovetail simulate -f -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.BadInputf("unexpected arguments %q\nSee '%s --help'", args, cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout = cmd.OutOrStdout()
			opts.Stderr = cmd.ErrOrStderr()
			if opts.PageSize < 1 {
				return cmdutil.BadInputf("--page-size: %d: must be at least 1", opts.PageSize)
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
	f.StringVarP(&opts.Output, "output", "o", "", "file to write (default: stdout)")
	f.Int64Var(&opts.PageSize, "page-size", clusterdump.DefaultPageSize, "objects per list request")
	return cmd
}

// Run reads the cluster and writes the snapshot.
func Run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c := opts.Client
	host := "the test client"
	if c == nil {
		cfg, err := cmdutil.RESTConfig(opts.Kubeconfig, opts.Context)
		if err != nil {
			return err
		}
		host = cfg.Host
		cl, err := cmdutil.Client(cfg)
		if err != nil {
			return err
		}
		c = cl
	}
	begin := opts.Now()
	fmt.Fprintf(opts.Stderr, "snapshot: reading %s (read-only)\n", host)
	d, err := clusterdump.Read(ctx, c, clusterdump.Options{PageSize: opts.PageSize, Progress: opts.Stderr})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("snapshot interrupted, nothing written: %w", err)
		}
		return err
	}
	header := []string{
		fmt.Sprintf("dovetail snapshot (%s) of %s at %s", version.Version, host, begin.UTC().Format(time.RFC3339)),
		"Input for: dovetail simulate -f FILE. Pods carry only what scheduling needs; see docs/snapshot.md.",
	}
	var buf bytes.Buffer
	if err := d.WriteYAML(&buf, header); err != nil {
		return err
	}
	if err := write(opts.Output, opts.Stdout, buf.Bytes()); err != nil {
		return err
	}
	where := "stdout"
	if opts.Output != "" && opts.Output != "-" {
		where = opts.Output
	}
	fmt.Fprintf(opts.Stderr, "snapshot: wrote %d objects (%d nodes, %d pods) to %s in %s\n",
		d.Count(), len(d.Nodes), len(d.Pods), where, opts.Now().Sub(begin).Round(time.Millisecond))
	return nil
}

// write puts data on stdout, or into path through a temporary file in the
// same directory renamed into place.
func write(path string, stdout io.Writer, data []byte) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return cmdutil.BadInputf("--output %s: directory %s does not exist", path, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--output %s: %w", path, err)
	}
	return nil
}
