package cost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cost"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	costctrl "github.com/dovetail-sh/dovetail/pkg/controllers/cost"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

// TestCostOverAWindowWithARestart runs the cost record controller on the
// real API server with a fake clock: two hours of three NodeClaims, the
// controller replaced by a new one half-way, a NodeClaim deleted before
// the end; then `dovetail cost --by team` reads the record and the fleet.
func TestCostOverAWindowWithARestart(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ns := env.Namespace()
	ctx := context.Background()
	env.Create(controllerstest.EC2NodeClass("default"))
	for pool, team := range map[string]string{"web": "a", "ml": "a", "batch": "b"} {
		np := controllerstest.NodePool(pool)
		np.Labels = map[string]string{"team": team}
		env.Create(np)
	}
	launch := func(name, pool, ct, price string) *karpv1.NodeClaim {
		t.Helper()
		nc := controllerstest.NodeClaim(name, pool)
		nc.Labels[karpv1.CapacityTypeLabelKey] = ct
		nc.Labels[corev1.LabelInstanceTypeStable] = "m5.large"
		nc.Annotations = map[string]string{karpv1.AnnotationPricePerHour: price, karpv1.AnnotationOffering: "m5.large/us-east-1a/" + ct}
		env.Create(nc)
		nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", env.Clock.Now())
		if err := env.Client.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	node := func(name string, labels map[string]string) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		env.Create(n)
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("29")}
		n.Status.Capacity = n.Status.Allocatable
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	reconcile := func(c *costctrl.Controller) {
		t.Helper()
		res, err := c.Reconcile(ctx, singleton.Request(c.Name()))
		if err != nil || res.RequeueAfter != costctrl.DefaultInterval {
			t.Fatalf("reconcile: %v, %+v", err, res)
		}
	}

	web := launch("web-1", "web", karpv1.CapacityTypeOnDemand, "0.1")
	batch := launch("batch-1", "batch", karpv1.CapacityTypeSpot, "0.04")
	c1 := costctrl.NewController(env.Client, env.Client, env.Clock, costctrl.Options{Namespace: ns})
	reconcile(c1) // starts the record
	env.Clock.Step(time.Hour)
	reconcile(c1)
	ml := launch("ml-1", "ml", karpv1.CapacityTypeOnDemand, "0.5")

	// The controller restarts: a new one reads the record back, after 30
	// minutes in which nothing ran.
	c2 := costctrl.NewController(env.Client, env.Client, env.Clock, costctrl.Options{Namespace: ns})
	env.Clock.Step(30 * time.Minute)
	reconcile(c2)
	env.Delete(batch)
	env.Clock.Step(30 * time.Minute)
	reconcile(c2)

	// The fleet now: web-1's node, a node no NodeClaim made (priced from
	// the catalog by its labels: m5.large on-demand), ml-1 still launching.
	node("web-1-node", map[string]string{karpv1.NodePoolLabelKey: "web", corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a"})
	web.Status.NodeName = "web-1-node"
	if err := env.Client.Status().Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	node("cas-node", map[string]string{corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a", "eks.amazonaws.com/capacityType": "ON_DEMAND"})
	_ = ml
	pod := controllerstest.Pod(ns, "app", "web-1-node")
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	env.Create(pod)

	var stdout, stderr bytes.Buffer
	newCmd := func() *cobra.Command {
		cmd := cost.NewCmd(func(ctx context.Context, o *cost.Options) error {
			o.Now = env.Clock.Now
			return cost.Run(ctx, o)
		})
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		return cmd
	}
	cmd := newCmd()
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "--namespace", ns, "--by", "team", "--since", "24h", "-o", "json"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("cost: %v\n%s", err, stderr.String())
	}
	var rep cost.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	groups := map[string]cost.Group{}
	for _, g := range rep.Groups {
		groups[g.Name] = g
	}
	// Spent: web 2h x 0.1 + ml 1h x 0.5 (the restart's 30 minutes
	// included); batch 1.5h x 0.04, all spot, kept after its deletion.
	if a := groups["a"]; !near(a.Spent, 0.7) || !near(a.NodeHours, 3) || a.Nodes != 2 || !near(a.PricePerHour, 0.6) {
		t.Errorf("team a = %+v; want $0.70 spent over 3 node-hours, 2 nodes at $0.6/h", a)
	}
	if b := groups["b"]; !near(b.Spent, 0.06) || !near(b.SpotSpent, 0.06) || b.Nodes != 0 || b.PricePerHour != 0 {
		t.Errorf("team b = %+v; want $0.06 spent on spot and no node now", b)
	}
	if u := groups["(no team)"]; u.Nodes != 1 || !near(u.PricePerHour, 0.096) {
		t.Errorf("the unmanaged node = %+v; want 1 node at the catalog's m5.large $0.096/h", u)
	}
	// The bound: one pod of 1 CPU needs one small node, far below $0.696/h.
	if rep.BoundPods != 1 || rep.BoundUnplaced != 0 || rep.LowerBoundPricePerHour <= 0 || rep.LowerBoundPricePerHour > 0.05 {
		t.Errorf("lower bound %v over %d pods (%d unplaced); want one pod's bound, above 0 and below $0.05/h", rep.LowerBoundPricePerHour, rep.BoundPods, rep.BoundUnplaced)
	}
	if !rep.Record.Found || !near(rep.Total.Spent, 0.76) || !near(rep.Total.PricePerHour, 0.696) {
		t.Errorf("total %+v, record %+v", rep.Total, rep.Record)
	}

	t.Run("html", func(t *testing.T) { testHTML(t, newCmd, &stdout, ns) })

	// A window of the last 30 minutes holds only the last hour bucket(s);
	// it is never more than the whole.
	stdout.Reset()
	cmd = newCmd()
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "--namespace", ns, "--since", "30m", "--no-bound"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "NODEPOOL") || !strings.Contains(stdout.String(), "Record: "+ns+"/dovetail-cost") {
		t.Errorf("text output:\n%s", stdout.String())
	}
	t.Logf("$ dovetail cost --since 30m --no-bound\n%s", stdout.String())

	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dovetail-cost"}, &cm); err != nil {
		t.Fatal(err)
	}
	t.Logf("record: %d bytes", len(cm.Data["record.json"]))
}

// testHTML writes the report with --html and -o json, renders the page in
// headless Chromium (Debian's package, installed by hack/install-chromium.sh
// from make test; missing, the test fails): the screenshot is not blank and
// shows both charts' colours, and every number of the table in the DOM
// (--dump-dom) matches -o json.
func testHTML(t *testing.T, newCmd func() *cobra.Command, stdout *bytes.Buffer, ns string) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (hack/install-chromium.sh installs it; make test runs it): %v", err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "cost.html")
	stdout.Reset()
	cmd := newCmd()
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "--namespace", ns, "--by", "team", "--since", "24h", "-o", "json", "--html", page})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rep cost.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Series) < 2 {
		t.Fatalf("series %+v; want the record's hours", rep.Series)
	}
	headless := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1000,1200"}, args...)
		c := exec.CommandContext(ctx, chromium, append(all, "file://"+page)...)
		c.Env = append(os.Environ(), "HOME="+dir)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
		return out.Bytes()
	}
	shot := filepath.Join(dir, "cost.png")
	headless("--screenshot=" + shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	bounds := img.Bounds()
	nonWhite, first, spot := 0, 0, 0
	for yy := bounds.Min.Y; yy < bounds.Max.Y; yy++ {
		for xx := bounds.Min.X; xx < bounds.Max.X; xx++ {
			r, g, b, _ := img.At(xx, yy).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			if r < 245 || g < 245 || b < 245 {
				nonWhite++
			}
			close := func(cr, cg, cb uint32) bool {
				d := func(a, b uint32) uint32 { return max(a, b) - min(a, b) }
				return d(r, cr) < 8 && d(g, cg) < 8 && d(b, cb) < 8
			}
			if close(0x1f, 0x77, 0xb4) {
				first++ // the first group's line
			}
			if close(0xb2, 0x79, 0xa2) {
				spot++ // the spot bars
			}
		}
	}
	total := bounds.Dx() * bounds.Dy()
	t.Logf("screenshot %dx%d: %.1f%% non-white, %d px of the first series, %d px of spot", bounds.Dx(), bounds.Dy(), 100*float64(nonWhite)/float64(total), first, spot)
	if nonWhite < total/50 || first < 50 || spot < 20 {
		t.Errorf("the screenshot looks blank: %d of %d pixels not white, %d of the first series' colour, %d of spot's", nonWhite, total, first, spot)
	}

	dom := string(headless("--dump-dom"))
	cell := regexp.MustCompile(`<td class="(\w+)" data-group="([^"]*)">([^<]*)</td>`)
	got := map[string]map[string]float64{}
	for _, m := range cell.FindAllStringSubmatch(dom, -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("cell %q: %v", m[0], err)
		}
		g := html.UnescapeString(m[2])
		if got[g] == nil {
			got[g] = map[string]float64{}
		}
		got[g][m[1]] = v
	}
	for _, g := range append(rep.Groups, rep.Total) {
		want := map[string]float64{"nodes": float64(g.Nodes), "spotNodes": float64(g.SpotNodes), "pricePerHour": g.PricePerHour,
			"spotPricePerHour": g.SpotPricePerHour, "spent": g.Spent, "spotSpent": g.SpotSpent, "nodeHours": g.NodeHours}
		for field, w := range want {
			if v, ok := got[g.Name][field]; !ok || math.Abs(v-w) > 1e-4 {
				t.Errorf("DOM %s %s = %v (present %v); -o json says %v", g.Name, field, v, ok, w)
			}
		}
	}
	if !strings.Contains(dom, `id="chart-groups"`) || !strings.Contains(dom, `id="chart-spot"`) {
		t.Error("the DOM lacks the charts")
	}
	if keep := os.Getenv("COST_HTML_KEEP"); keep != "" {
		_ = os.WriteFile(filepath.Join(keep, "cost.html"), mustRead(t, page), 0o644)
		_ = os.WriteFile(filepath.Join(keep, "cost.png"), mustRead(t, shot), 0o644)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
