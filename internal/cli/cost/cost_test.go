package cost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
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
