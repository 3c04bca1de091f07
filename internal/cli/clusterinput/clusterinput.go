package clusterinput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/clusterdump"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	pkgexplain "github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Source says where to read from: the -f files when set, else the cluster
// of the kubeconfig (or Client).
type Source struct {
	Kubeconfig, Context string
	Files               []string
	Region              string // "" detects it from the nodes
	// Namespace is the controller's, where it publishes the offerings it
	// holds unavailable ("" means kube-system); Now tells which entries
	// are still in force (nil means time.Now).
	Namespace string
	Now       func() time.Time
	Stderr    io.Writer
	Client    client.Reader // replaces the kubeconfig's client (tests)
	// SpreadDefaults are --scheduler-config's default spreads, given to
	// the pods of the -f files without their own (Load; files only).
	SpreadDefaults []corev1.TopologySpreadConstraint
}

// Input is a cluster read for a command, with its engine input.
type Input struct {
	Cluster     *snapshot.Cluster
	Engine      *engine.Input
	Nominations []pkgexplain.Nomination
	Region      string
	Where       string // "the cluster at https://..." or "the files a.yaml, b.yaml"
	// Catalog is the built-in catalog the engine input was priced from.
	Catalog *catalog.Catalog
}

// Load reads the live cluster, or the -f files, and builds the engine's
// input. For a pod reference it also reads the Nominated events of the
// pod's namespace (live only).
func Load(ctx context.Context, opts Source, pod engine.PodRef) (*Input, error) {
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
		c.Pods = spreaddefaults.Apply(opts.SpreadDefaults, c.Pods, m.SpreadObjects())
		for _, w := range warnings {
			cmdutil.Warn(opts.Stderr, w)
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
		un, err := published(ctx, c, opts)
		if err != nil {
			return nil, err
		}
		out.Cluster.Unavailable = un
		cm, err := commitments(ctx, c, opts)
		if err != nil {
			return nil, err
		}
		out.Cluster.Commitments = cm
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
	// A broken object (a NodePool whose EC2NodeClass is missing) is
	// reported and left out, as the controllers do; the rest is answered.
	usable, notices := snapshot.LeaveOutBroken(out.Cluster)
	for _, n := range notices {
		cmdutil.Warn(opts.Stderr, n)
	}
	in, err := snapshot.Build(usable, snapshot.NewCatalogSource(cat, out.Region, zones), snapshot.Options{Region: out.Region})
	if err != nil {
		return nil, cmdutil.BadInputf("%s: %v", out.Where, err)
	}
	out.Engine = in
	out.Catalog = cat
	return out, nil
}

// published reads the offerings the controller holds unavailable from its
// ConfigMap (none when it is absent).
func published(ctx context.Context, c client.Reader, opts Source) ([]engine.OfferingKey, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = "kube-system"
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	var cm corev1.ConfigMap
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: unavailable.PublishedConfigMap}, &cm)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", ns, unavailable.PublishedConfigMap, err)
	}
	keys, err := unavailable.Decode([]byte(cm.Data[unavailable.PublishedKey]), now())
	if err != nil {
		fmt.Fprintf(opts.Stderr, "warning: %s/%s: %v\n", ns, unavailable.PublishedConfigMap, err)
		return nil, nil
	}
	out := make([]engine.OfferingKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, engine.OfferingKey{InstanceType: k.InstanceType, Zone: k.Zone, CapacityType: k.CapacityType})
	}
	return out, nil
}

// commitments reads the ConfigMap dovetail-commitments of the
// controller's namespace (none when it is absent or unreadable; a warning
// naming the bad fields when it does not validate).
func commitments(ctx context.Context, c client.Reader, opts Source) (commitment.Spec, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = "kube-system"
	}
	var cm corev1.ConfigMap
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: commitment.ConfigMapName}, &cm)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return commitment.Spec{}, nil
	}
	if err != nil {
		return commitment.Spec{}, fmt.Errorf("reading %s/%s: %w", ns, commitment.ConfigMapName, err)
	}
	spec, errs := commitment.FromConfigMap(cm.Data)
	if len(errs) > 0 {
		cmdutil.Warn(opts.Stderr, fmt.Sprintf("%s/%s: no commitment applied: %v", ns, commitment.ConfigMapName, errs.ToAggregate()))
	}
	return spec, nil
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

// Manifests reads the -f files, or the live cluster (as `dovetail snapshot`
// writes it), as simulate input, and says where it came from.
func Manifests(ctx context.Context, opts Source) (*simulate.Manifests, string, error) {
	m := &simulate.Manifests{}
	if len(opts.Files) > 0 {
		var errs simulate.InputErrors
		for _, f := range opts.Files {
			files, err := readInputs(f)
			if err != nil {
				return nil, "", err
			}
			for _, in := range files {
				if err := m.Read(in.name, in.data); err != nil {
					var ies simulate.InputErrors
					if errors.As(err, &ies) {
						errs = append(errs, ies...)
						continue
					}
					return nil, "", err
				}
			}
		}
		if len(errs) > 0 {
			return nil, "", cmdutil.BadInput(errs)
		}
		return m, "the files " + strings.Join(opts.Files, ", "), nil
	}
	c := opts.Client
	host := "the cluster"
	if c == nil {
		cfg, err := cmdutil.RESTConfig(opts.Kubeconfig, opts.Context)
		if err != nil {
			return nil, "", err
		}
		cl, err := cmdutil.Client(cfg)
		if err != nil {
			return nil, "", err
		}
		c, host = cl, "the cluster at "+cfg.Host
	}
	d, err := clusterdump.Read(ctx, c, clusterdump.Options{})
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	if err := d.WriteYAML(&buf, nil); err != nil {
		return nil, "", err
	}
	if err := m.Read(host, buf.Bytes()); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", host, err)
	}
	return m, host, nil
}

// RegionOf is the --region value, else the nodes' region label, else
// us-east-1.
func RegionOf(region string, nodes []*corev1.Node) string {
	if region != "" {
		return region
	}
	for _, n := range nodes {
		if r := n.Labels[corev1.LabelTopologyRegion]; r != "" {
			return r
		}
	}
	return "us-east-1"
}
