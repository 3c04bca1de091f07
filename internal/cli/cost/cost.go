package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/internal/cli/clusterinput"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/costrecord"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/fleet"
	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// DefaultNamespace holds the cost record unless --namespace says otherwise
// (the controller's namespace).
const DefaultNamespace = "kube-system"

// Options holds the inputs of `dovetail cost` and its dependencies.
type Options struct {
	Kubeconfig string
	Context    string
	Namespace  string
	By         string // NodePool label key; "" groups by NodePool
	Since      time.Duration
	Region     string
	Output     string
	NoBound    bool
	HTML       string // file for the HTML report; "" none

	Stdout, Stderr io.Writer
	Now            func() time.Time
	Client         client.Reader // replaces the kubeconfig's client (tests)
}

// NewCmd builds `dovetail cost`. runF replaces Run in tests; nil runs it.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Now: time.Now}
	cmd := &cobra.Command{
		Use:   "cost [--by LABEL] [--since DURATION] [-o text|json|yaml]",
		Short: "What the fleet costs: $/h now per NodePool or team, spot share, $ spent over a window, and the lower bound",
		Long: `Read the cluster of the kubeconfig (read-only) and print, per NodePool or
per value of a NodePool label (--by team): nodes, spot nodes, $/h now,
spot $/h, and the dollars spent since --since ago (default 24h) from the
cost record the controller keeps in the ConfigMap dovetail-cost of
--namespace (hourly buckets, 31 days, survives controller restarts and
NodeClaim deletion). Then the fleet's total $/h next to the engine's
lower bound for all its pods (--no-bound skips it).

$/h comes from the price the controller recorded on each NodeClaim at
launch; other nodes are priced from the built-in catalog by their labels.
Exit codes: 0 printed, 1 cluster error, 2 bad input.`,
		Example: `  dovetail cost
  dovetail cost --by team --since 168h -o json`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if opts.Since <= 0 || opts.Since > costrecord.Retention {
				return cmdutil.BadInputf("--since %s: must be above 0 and at most %s (the record keeps 31 days)", opts.Since, costrecord.Retention)
			}
			if !slices.Contains([]string{"text", "json", "yaml"}, opts.Output) {
				return cmdutil.BadInputf("-o: %q is not one of text, json, yaml", opts.Output)
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
	f.StringVar(&opts.Namespace, "namespace", DefaultNamespace, "namespace of the controller and its cost record")
	f.StringVar(&opts.By, "by", "", "group by this NodePool label (e.g. team) instead of by NodePool")
	f.DurationVar(&opts.Since, "since", 24*time.Hour, "window of the $ spent, up to 744h")
	f.StringVar(&opts.Region, "region", "", "region of the built-in catalog (default: the nodes' region label, else us-east-1)")
	f.StringVarP(&opts.Output, "output", "o", "text", "output format: text|json|yaml")
	f.StringVar(&opts.HTML, "html", "", "also write a self-contained HTML report with charts to this file")
	f.BoolVar(&opts.NoBound, "no-bound", false, "skip the lower bound (one engine solve over every pod)")
	return cmd
}

// Report is what `dovetail cost -o json` prints.
type Report struct {
	GroupBy string  `json:"groupBy"`
	Since   string  `json:"since"`
	Groups  []Group `json:"groups"`
	Total   Group   `json:"total"`
	// SpotShare is the spot part of the $/h now, 0..1.
	SpotShare float64 `json:"spotShare"`
	// LowerBoundPricePerHour is the engine's lower bound for all pods (0
	// with --no-bound); BoundPods and BoundUnplaced what it covered.
	LowerBoundPricePerHour float64 `json:"lowerBoundPricePerHour"`
	BoundPods              int     `json:"boundPods"`
	BoundUnplaced          int     `json:"boundUnplacedPods"`
	// Commitments are what each commitment covers now (none without
	// commitments); Overlaid the nodes priced at a NodeOverlay's price.
	Commitments []CommitmentUse `json:"commitments,omitempty"`
	Overlaid    []OverlaidNode  `json:"overlaid,omitempty"`
	// Record says what the window's numbers come from.
	Record RecordInfo `json:"record"`
	// Series are the record's hours in the window, per group (for the
	// charts of --html).
	Series []HourPoint `json:"series"`
}

// Group is one NodePool or label value.
type Group struct {
	Name             string  `json:"name"`
	Nodes            int     `json:"nodes"`
	SpotNodes        int     `json:"spotNodes"`
	PricePerHour     float64 `json:"pricePerHour"`
	SpotPricePerHour float64 `json:"spotPricePerHour"`
	Spent            float64 `json:"spent"`
	SpotSpent        float64 `json:"spotSpent"`
	NodeHours        float64 `json:"nodeHours"`
	// CoveredPerHour is the part of PricePerHour that commitments (the
	// ConfigMap dovetail-commitments) cover; OnDemandUncoveredPerHour the
	// on-demand $/h they leave uncovered.
	CoveredPerHour           float64 `json:"coveredPerHour"`
	OnDemandUncoveredPerHour float64 `json:"onDemandUncoveredPerHour"`
}

// CommitmentUse is what one commitment covers now.
type CommitmentUse struct {
	Name           string  `json:"name"`
	Nodes          int     `json:"nodes"`
	CoveredPerHour float64 `json:"coveredPerHour"`
}

// OverlaidNode is a node priced at a NodeOverlay's adjusted price.
type OverlaidNode struct {
	Node         string  `json:"node"`
	Overlay      string  `json:"overlay"`
	PricePerHour float64 `json:"pricePerHour"`
}

// RecordInfo describes the cost record read.
type RecordInfo struct {
	ConfigMap string `json:"configMap"`
	Found     bool   `json:"found"`
	// Corrupt: the ConfigMap exists but its record does not parse or
	// holds impossible values (Note says which); nothing of it is used.
	Corrupt bool      `json:"corrupt,omitempty"`
	From    time.Time `json:"from,omitzero"`
	Through time.Time `json:"through,omitzero"`
	Note    string    `json:"note,omitempty"`
}

// Run reads the cluster and the record and prints the report.
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
	in, err := clusterinput.Load(ctx, clusterinput.Source{Region: opts.Region, Namespace: opts.Namespace, Now: opts.Now, Stderr: opts.Stderr, Client: c}, engine.PodRef{})
	if err != nil {
		return err
	}
	rec, info, err := readRecord(ctx, c, opts.Namespace, opts.Now())
	if err != nil {
		return err
	}
	rep := Build(in, rec, info, opts.By, opts.Since, opts.Now())
	if !opts.NoBound {
		b, pods, unplaced, err := fleet.LowerBound(in.Engine)
		if err != nil {
			return fmt.Errorf("computing the lower bound: %w", err)
		}
		rep.LowerBoundPricePerHour, rep.BoundPods, rep.BoundUnplaced = round(b), pods, unplaced
	}
	if opts.HTML != "" {
		var page bytes.Buffer
		if err := WriteHTML(&page, rep, opts.Now()); err != nil {
			return err
		}
		if err := os.WriteFile(opts.HTML, page.Bytes(), 0o644); err != nil {
			return cmdutil.BadInputf("--html %s: %v", opts.HTML, err)
		}
		fmt.Fprintf(opts.Stderr, "cost: wrote the HTML report to %s\n", opts.HTML)
	}
	var buf bytes.Buffer
	switch opts.Output {
	case "json":
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(append(data, '\n'))
	case "yaml":
		data, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		buf.Write(data)
	default:
		writeText(&buf, rep, opts.NoBound)
	}
	_, err = opts.Stdout.Write(buf.Bytes())
	return err
}

func readRecord(ctx context.Context, c client.Reader, ns string, now time.Time) (*costrecord.Record, RecordInfo, error) {
	info := RecordInfo{ConfigMap: ns + "/" + costrecord.ConfigMapName}
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: costrecord.ConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		info.Note = "no cost record: the controller's cost recorder has not run in namespace " + ns + " (see --namespace)"
		return nil, info, nil
	case err != nil:
		return nil, info, fmt.Errorf("reading the cost record %s: %w", info.ConfigMap, err)
	}
	rec, err := costrecord.Decode([]byte(cm.Data[costrecord.DataKey]), now)
	if err != nil {
		info.Corrupt = true
		info.Note = err.Error() + " (the controller replaces it at its next write)"
		return nil, info, nil
	}
	info.Found = true
	info.Through = rec.Through
	if len(rec.Hours) > 0 {
		info.From = time.Unix(rec.Hours[0].Start, 0).UTC()
	}
	return rec, info, nil
}

// Build computes the report from the cluster and the record.
func Build(in *clusterinput.Input, rec *costrecord.Record, info RecordInfo, by string, since time.Duration, now time.Time) *Report {
	fin := fleet.Input{Nodes: in.Cluster.Nodes, NodeClaims: in.Cluster.NodeClaims, Pods: in.Cluster.Pods, Catalog: in.Catalog, Region: in.Region,
		Commitments: in.Cluster.Commitments}
	if in.Engine != nil {
		fin.Pools = in.Engine.NodePools
	}
	rows := fleet.Build(fin)
	poolLabels := map[string]map[string]string{}
	for _, np := range in.Cluster.NodePools {
		poolLabels[np.Name] = np.Labels
	}
	groupOf := func(pool string, labels map[string]string) string {
		if by == "" {
			return pool
		}
		if v := labels[by]; v != "" {
			return v
		}
		return "(no " + by + ")"
	}
	rep := &Report{GroupBy: cmpOr(by, "nodepool"), Since: shortDuration(since), Record: info}
	idx := map[string]int{}
	get := func(name string) *Group {
		i, ok := idx[name]
		if !ok {
			i = len(rep.Groups)
			idx[name] = i
			rep.Groups = append(rep.Groups, Group{Name: name})
		}
		return &rep.Groups[i]
	}
	for _, g := range fleet.GroupBy(rows, func(r fleet.Node) string { return groupOf(r.Pool, poolLabels[r.Pool]) }) {
		x := get(g.Name)
		x.Nodes, x.SpotNodes, x.PricePerHour, x.SpotPricePerHour = g.Nodes, g.SpotNodes, g.PricePerHour, g.SpotPricePerHour
		x.CoveredPerHour, x.OnDemandUncoveredPerHour = g.CoveredPerHour, g.OnDemandUncoveredPerHour
	}
	byCommitment := map[string]int{}
	for _, r := range rows {
		if r.Overlay != "" {
			rep.Overlaid = append(rep.Overlaid, OverlaidNode{Node: r.Name, Overlay: r.Overlay, PricePerHour: round(r.PricePerHour)})
		}
		if r.Commitment == "" {
			continue
		}
		i, ok := byCommitment[r.Commitment]
		if !ok {
			i = len(rep.Commitments)
			byCommitment[r.Commitment] = i
			rep.Commitments = append(rep.Commitments, CommitmentUse{Name: r.Commitment})
		}
		rep.Commitments[i].Nodes++
		rep.Commitments[i].CoveredPerHour += r.CoveredPerHour
	}
	slices.SortFunc(rep.Commitments, func(a, b CommitmentUse) int { return strings.Compare(a.Name, b.Name) })
	for i := range rep.Commitments {
		rep.Commitments[i].CoveredPerHour = round(rep.Commitments[i].CoveredPerHour)
	}
	if rec != nil {
		for _, t := range rec.Since(now.Add(-since)) {
			if t.Dollars == 0 && t.NodeHours == 0 {
				continue
			}
			x := get(groupOf(t.Key.Pool, t.Key.Labels))
			x.Spent += t.Dollars
			x.SpotSpent += t.Spot
			x.NodeHours += t.NodeHours
		}
		for _, h := range rec.Series(now.Add(-since)) {
			p := HourPoint{Start: time.Unix(h.Start, 0).UTC(), ByGroup: map[string]float64{}}
			for _, c := range h.Cells {
				k := rec.Keys[c.Key]
				p.ByGroup[groupOf(k.Pool, k.Labels)] = round(p.ByGroup[groupOf(k.Pool, k.Labels)] + c.Dollars)
				p.Spot += c.Spot
				p.OnDemand += c.Dollars - c.Spot
			}
			p.Spot, p.OnDemand = round(p.Spot), round(p.OnDemand)
			rep.Series = append(rep.Series, p)
		}
		if through := rec.Through; now.Sub(through) > 10*time.Minute {
			rep.Record.Note = fmt.Sprintf("the record was last written %s ago: is the controller running?", now.Sub(through).Round(time.Minute))
		}
	}
	slices.SortStableFunc(rep.Groups, func(a, b Group) int {
		switch {
		case a.PricePerHour != b.PricePerHour:
			return -cmpF(a.PricePerHour, b.PricePerHour)
		case a.Spent != b.Spent:
			return -cmpF(a.Spent, b.Spent)
		}
		return strings.Compare(a.Name, b.Name)
	})
	rep.Total.Name = "TOTAL"
	for i := range rep.Groups {
		g := &rep.Groups[i]
		g.PricePerHour, g.SpotPricePerHour, g.Spent, g.SpotSpent, g.NodeHours = round(g.PricePerHour), round(g.SpotPricePerHour), round(g.Spent), round(g.SpotSpent), round(g.NodeHours)
		g.CoveredPerHour, g.OnDemandUncoveredPerHour = round(g.CoveredPerHour), round(g.OnDemandUncoveredPerHour)
		rep.Total.CoveredPerHour += g.CoveredPerHour
		rep.Total.OnDemandUncoveredPerHour += g.OnDemandUncoveredPerHour
		rep.Total.Nodes += g.Nodes
		rep.Total.SpotNodes += g.SpotNodes
		rep.Total.PricePerHour += g.PricePerHour
		rep.Total.SpotPricePerHour += g.SpotPricePerHour
		rep.Total.Spent += g.Spent
		rep.Total.SpotSpent += g.SpotSpent
		rep.Total.NodeHours += g.NodeHours
	}
	t := &rep.Total
	t.PricePerHour, t.SpotPricePerHour, t.Spent, t.SpotSpent, t.NodeHours = round(t.PricePerHour), round(t.SpotPricePerHour), round(t.Spent), round(t.SpotSpent), round(t.NodeHours)
	t.CoveredPerHour, t.OnDemandUncoveredPerHour = round(t.CoveredPerHour), round(t.OnDemandUncoveredPerHour)
	if t.PricePerHour > 0 {
		rep.SpotShare = round(t.SpotPricePerHour / t.PricePerHour)
	}
	if rep.Groups == nil {
		rep.Groups = []Group{}
	}
	if rep.Series == nil {
		rep.Series = []HourPoint{}
	}
	return rep
}

// shortDuration writes 24h for 24h0m0s and 30m for 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// WriteText writes the report as `cost` prints it (-o text).
func WriteText(w io.Writer, r *Report, noBound bool) { writeText(w, r, noBound) }

func writeText(w io.Writer, r *Report, noBound bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tNODES\tSPOT\t$/HOUR\tSPOT $/HOUR\t$ LAST %s\tNODE-HOURS\n", termtext.Escape(strings.ToUpper(r.GroupBy)), termtext.Escape(r.Since))
	for _, g := range append(r.Groups, r.Total) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.1f\n", termtext.Escape(g.Name), g.Nodes, g.SpotNodes, g.PricePerHour, g.SpotPricePerHour, g.Spent, g.NodeHours)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nSpot share: %.0f%% of $/h, %d of %d nodes\n", r.SpotShare*100, r.Total.SpotNodes, r.Total.Nodes)
	if len(r.Commitments) > 0 || r.Total.CoveredPerHour > 0 {
		var parts []string
		for _, c := range r.Commitments {
			parts = append(parts, fmt.Sprintf("%s $%.4f/h on %d nodes", termtext.Escape(c.Name), c.CoveredPerHour, c.Nodes))
		}
		fmt.Fprintf(w, "Commitments: $%.4f/hour of on-demand covered (%s), $%.4f/hour on-demand uncovered\n",
			r.Total.CoveredPerHour, strings.Join(parts, ", "), r.Total.OnDemandUncoveredPerHour)
	}
	for _, o := range r.Overlaid {
		fmt.Fprintf(w, "Overlay: %s priced $%.4f/hour by NodeOverlay %s\n", termtext.Escape(o.Node), o.PricePerHour, termtext.Escape(o.Overlay))
	}
	if !noBound {
		// The bound prices covered on-demand capacity at the margin, as
		// the engine does: compare it with what is not covered.
		margin := r.Total.PricePerHour - r.Total.CoveredPerHour
		gap := ""
		if r.LowerBoundPricePerHour > 0 {
			gap = fmt.Sprintf(" (the fleet costs %.0f%% more)", (margin/r.LowerBoundPricePerHour-1)*100)
		}
		now := fmt.Sprintf("$%.4f/hour now", r.Total.PricePerHour)
		if r.Total.CoveredPerHour > 0 {
			now = fmt.Sprintf("$%.4f/hour now, $%.4f/hour beyond its commitments", r.Total.PricePerHour, margin)
		}
		fmt.Fprintf(w, "Fleet: %s; lower bound for its %d pods: $%.4f/hour%s", now, r.BoundPods, r.LowerBoundPricePerHour, gap)
		if r.BoundUnplaced > 0 {
			fmt.Fprintf(w, "; %d pods no NodePool can take are left out", r.BoundUnplaced)
		}
		fmt.Fprintln(w)
	}
	switch {
	case r.Record.Corrupt:
		fmt.Fprintf(w, "Record: %s corrupt\n", termtext.Escape(r.Record.ConfigMap))
	case r.Record.Found:
		fmt.Fprintf(w, "Record: %s, %s to %s\n", termtext.Escape(r.Record.ConfigMap), r.Record.From.Format(time.RFC3339), r.Record.Through.Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "Record: %s not found\n", termtext.Escape(r.Record.ConfigMap))
	}
	if r.Record.Note != "" {
		fmt.Fprintln(w, "Note:", termtext.Escape(r.Record.Note))
	}
}
