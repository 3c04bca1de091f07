//go:build e2elong

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// Long disruption scenarios: `make test-e2e-long` (they add more than the
// few minutes `make test` may spend).

// TestScaleDown500To100: the mixed 500-pod workload on the example pools,
// then scaled down to 100 pods with consolidation on: within 5 minutes
// (time scale 0.1) every remaining pod runs and the fleet costs within 10%
// of what `dovetail simulate` plans for the 100 pods with the do-not-disrupt
// db pod's node kept as an existing node (plus that node); no pod stays pending
// longer than 60 s meanwhile. Watched over the whole scale-down (API
// watches, every change): web's PDB (minAvailable 20) always has 20 web
// pods available; the db pod (karpenter.sh/do-not-disrupt) is never
// evicted and its node never tainted or deleted; and no NodeClaim is
// created but the commands' replacements (those provisioning launches for
// pods left pending are counted and reported).
//
// The comparison is made fair and independent of the wall clock: every
// example pool gets the test's own budget (team-b's example budget "0" on
// weekdays 09:00-17:00 UTC would otherwise decide the result), and the
// controller runs with SpotToSpotConsolidation=true (the example pools are
// spot-first: with the gate off, spot nodes can only be deleted, while
// simulate packs freely); simulate gets the same gate.
func TestScaleDown500To100(t *testing.T) {
	s := newScenario(t)
	withSpotToSpot(t)
	withBudgets(t, []karpv1.Budget{{Nodes: scaleDownBudget}})
	file := filepath.Join("testdata", "mixed.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data = withGuards(t, data)
	t.Cleanup(func() {
		_ = kube.Delete(t.Context(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "e2e-db-us-east-1a"}})
		_ = setConsolidateAfter(karpv1.NeverDuration())
	})
	s.apply(data)
	s.waitRunning(500, 4*time.Minute)
	before := fleetPrice(t)
	nodesBefore := len(nodeClaims(t))
	var dbPods corev1.PodList
	if err := kube.List(t.Context(), &dbPods, client.InNamespace(s.ns), client.MatchingLabels{"app": "db"}); err != nil || len(dbPods.Items) != 1 {
		t.Fatalf("the db pod: %d found (err %v)", len(dbPods.Items), err)
	}
	dbNode := dbPods.Items[0].Spec.NodeName
	fleet0 := watchFleet(t, "", 0)
	pods := watchPods(t, s.ns, map[string]string{"app": "web"})

	after := map[string]int32{"web": 40, "api": 30, "cache": 4, "reports": 25, "db": 1}
	small := scaledManifest(t, data, after)
	// The db pod's node stays whatever consolidation does (do-not-disrupt):
	// simulate gets it as an existing node (its room free, as it is to the
	// cluster), and the reference is simulate's new nodes plus that node's
	// price. A fresh plan without it cannot be reached when the scale-up
	// put db on a large node.
	pinned, pinnedPrice := pinnedNodeManifest(t, dbNode)
	plan := simulatePlanWith(t, simulate.Options{SpotToSpotConsolidation: true}, small, pinned)
	reference := plan.TotalPricePerHour + pinnedPrice
	fresh := simulatePlanWith(t, simulate.Options{SpotToSpotConsolidation: true}, small)
	t.Logf("reference: simulate $%.4f/h for new nodes + the db pod's node %s $%.4f/h = $%.4f/h (a fresh plan without it: $%.4f/h); on the kept node: %v",
		plan.TotalPricePerHour, dbNode, pinnedPrice, reference, fresh.TotalPricePerHour, plan.ExistingNodes)

	if err := setConsolidateAfter(karpv1.MustParseNillableDuration("10s")); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	for name, n := range after {
		s.scale(name, n)
	}
	// The guards are checked however the test ends (the cost wait may
	// fail first).
	t.Cleanup(func() {
		pods.stop()
		fleet0.stop()
		minAvail, at, disturbed := pods.result()
		t.Logf("PDB web (minAvailable %d): fewest available %d (at %s)", webMinAvailable, minAvail, at)
		if minAvail < webMinAvailable {
			t.Errorf("web's PDB violated: %d web pods available at %s, minAvailable %d", minAvail, at, webMinAvailable)
		}
		if len(disturbed) > 0 {
			t.Errorf("do-not-disrupt pods evicted or deleted: %v", disturbed)
		}
		if fleet0.nodeDisrupted(dbNode) {
			t.Errorf("node %s of the do-not-disrupt db pod was tainted or deleted", dbNode)
		}
		extra := fleet0.createdBeyondReplacements(begin)
		t.Logf("NodeClaims created during the scale-down beyond the commands' replacements (provisioning for pending pods): %d %v", len(extra), extra)
		if len(extra) > 0 {
			t.Errorf("%d NodeClaims created beyond the commands' replacements: %v", len(extra), extra)
		}
	})

	// Pending pods are watched (polled) for the whole scale-down.
	var mu sync.Mutex
	pendingSince := map[string]time.Time{}
	worst := time.Duration(0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			var pods corev1.PodList
			if err := kube.List(t.Context(), &pods, client.InNamespace(s.ns)); err == nil {
				now := time.Now()
				mu.Lock()
				seen := map[string]bool{}
				for _, p := range pods.Items {
					if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
						seen[p.Name] = true
						if _, ok := pendingSince[p.Name]; !ok {
							pendingSince[p.Name] = now
						}
						worst = max(worst, now.Sub(pendingSince[p.Name]))
					}
				}
				for name := range pendingSince {
					if !seen[name] {
						delete(pendingSince, name)
					}
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	t.Cleanup(func() {
		if t.Failed() {
			logKeptReasons(t)
			logDisruptionFigures(t)
		}
	})
	var fleet float64
	eventually(t, 5*time.Minute, "100 pods Running on a fleet within 10% of simulate", func() (bool, error) {
		running, pending, err := s.running()
		if err != nil {
			return false, err
		}
		fleet = fleetPrice(t)
		gap := (fleet - reference) / reference
		if running != 100 || gap > 0.10 {
			return false, fmt.Errorf("%d running, %d pending, %d NodeClaims, fleet $%.4f/h vs reference $%.4f/h (%.1f%%)",
				running, pending, len(nodeClaims(t)), fleet, reference, 100*gap)
		}
		return true, nil
	})
	close(stop)
	<-done
	t.Logf("scale-down 500 -> 100 pods in %s: %d -> %d NodeClaims, $%.4f/h -> $%.4f/h (reference $%.4f/h, gap %.1f%%); longest pending %s",
		time.Since(begin).Round(time.Second), nodesBefore, len(nodeClaims(t)), before, fleet, reference,
		100*math.Abs(fleet-reference)/reference, worst.Round(time.Second))
	logDisruptionFigures(t)
	mu.Lock()
	defer mu.Unlock()
	if worst > 60*time.Second {
		t.Errorf("a pod was pending for %s during the scale-down (want at most 60 s)", worst)
	}
	// Commands still in progress end before instances and NodeClaims are
	// compared one to one.
	eventually(t, 2*time.Minute, "instances and NodeClaims one to one", func() (bool, error) {
		err := consistent(t)
		return err == nil, err
	})
}

// pinnedNodeManifest writes the Node (name, labels, taints, capacity,
// allocatable, Ready) as simulate's existing node, and returns the file
// and the node's price (its NodeClaim's).
func pinnedNodeManifest(t *testing.T, name string) (string, float64) {
	t.Helper()
	n := &corev1.Node{}
	if err := kube.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	price, found := 0.0, false
	for _, nc := range nodeClaims(t) {
		if nc.Status.NodeName == name {
			price, found = nodeclaimutil.HourlyPrice(&nc)
		}
	}
	if !found {
		t.Fatalf("no price for node %s (its NodeClaim)", name)
	}
	kept := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec:       corev1.NodeSpec{ProviderID: n.Spec.ProviderID, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	b, err := yaml.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pinned-node.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, price
}

// webMinAvailable is the minAvailable of the PDB withGuards gives web (40
// pods after the scale-down).
const webMinAvailable = 20

// withGuards adds what the scale-down must respect to the mixed manifests:
// a PDB over web (minAvailable webMinAvailable) and
// karpenter.sh/do-not-disrupt on the db pod. simulate reads the same
// manifests.
func withGuards(t *testing.T, data []byte) []byte {
	t.Helper()
	var out []byte
	for _, obj := range decode(t, data) {
		if obj.GetKind() == "Deployment" && obj.GetName() == "db" {
			if err := unstructured.SetNestedField(obj.Object, "true", "spec", "template", "metadata", "annotations", karpv1.DoNotDisruptAnnotationKey); err != nil {
				t.Fatal(err)
			}
		}
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, b...), []byte("---\n")...)
	}
	pdb := fmt.Sprintf("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\nspec:\n  minAvailable: %d\n  selector:\n    matchLabels: {app: web}\n", webMinAvailable)
	return append(out, []byte(pdb)...)
}

// scaleDownBudget is the budget every example pool gets in the scale-down
// test: the peer's default 10% is kept out of the comparison's way.
const scaleDownBudget = "20%"

// withSpotToSpot restarts the controller with
// FEATURE_GATES=SpotToSpotConsolidation=true, and without it when the
// test ends.
func withSpotToSpot(t *testing.T) {
	t.Helper()
	if err := ctrl.Reconfigure(t.Context(), func(c *ctrlproc.Component) {
		c.Env = mergeMap(c.Env, map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=true"})
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctrl.Reconfigure(context.Background(), func(c *ctrlproc.Component) {
			delete(c.Env, "FEATURE_GATES")
		}); err != nil {
			t.Error(err)
		}
	})
}

// withBudgets replaces every example NodePool's disruption budgets, and
// restores them when the test ends.
func withBudgets(t *testing.T, budgets []karpv1.Budget) {
	t.Helper()
	var pools karpv1.NodePoolList
	if err := kube.List(t.Context(), &pools); err != nil {
		t.Fatal(err)
	}
	saved := map[string][]karpv1.Budget{}
	for i := range pools.Items {
		np := &pools.Items[i]
		saved[np.Name] = np.Spec.Disruption.Budgets
		base := np.DeepCopy()
		np.Spec.Disruption.Budgets = budgets
		if err := kube.Patch(t.Context(), np, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for name, b := range saved {
			np := &karpv1.NodePool{}
			if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, np); err != nil {
				t.Error(err)
				continue
			}
			base := np.DeepCopy()
			np.Spec.Disruption.Budgets = b
			if err := kube.Patch(context.Background(), np, client.MergeFrom(base)); err != nil {
				t.Error(err)
			}
		}
	})
}

// setConsolidateAfter sets consolidateAfter on every example NodePool.
func setConsolidateAfter(d karpv1.NillableDuration) error {
	var pools karpv1.NodePoolList
	if err := kube.List(context.Background(), &pools); err != nil {
		return err
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		base := np.DeepCopy()
		np.Spec.Disruption.ConsolidateAfter = d
		if err := kube.Patch(context.Background(), np, client.MergeFrom(base)); err != nil {
			return err
		}
	}
	return nil
}

// scaledManifest writes the manifests with the Deployments' replicas
// replaced, for simulate.
func scaledManifest(t *testing.T, data []byte, replicas map[string]int32) string {
	t.Helper()
	var out []byte
	for _, obj := range decode(t, data) {
		if n, ok := replicas[obj.GetName()]; ok && obj.GetKind() == "Deployment" {
			if err := unstructured.SetNestedField(obj.Object, int64(n), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
		}
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, b...), []byte("---\n")...)
	}
	path := filepath.Join(t.TempDir(), "mixed-100.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// logDisruptionFigures logs the controller's disruption decisions by type
// (its metrics) and its last plan summaries (its log).
func logDisruptionFigures(t *testing.T) {
	r := ctrl.Replica(0)
	if r == nil {
		return
	}
	if resp, err := http.Get(r.MetricsURL()); err == nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "karpenter_voluntary_disruption_decisions_total{") ||
				strings.HasPrefix(line, "karpenter_nodeclaims_disrupted_total{") ||
				strings.HasPrefix(line, "dovetail_disruption_savings_dollars_per_hour_total{") {
				t.Log(line)
			}
		}
	}
	data, err := os.ReadFile(r.LogPath)
	if err != nil {
		return
	}
	var plans []string
	nominated, ungated := 0, 0
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(line, "disruption plan"):
			plans = append(plans, line)
		case strings.Contains(line, "placement gate"), strings.Contains(line, "recreated pods of evicted owners"):
			t.Log(line)
		case strings.Contains(line, "nominated recreated pods to their planned nodes"):
			var l struct{ Pods, Ungated int }
			if json.Unmarshal([]byte(line), &l) == nil {
				nominated += l.Pods
				ungated += l.Ungated
			}
		}
	}
	t.Logf("nominator: %d nominations written, %d gates lifted", nominated, ungated)
	if len(plans) > 5 {
		plans = plans[len(plans)-5:]
	}
	for _, p := range plans {
		t.Log(p)
	}
}

func mergeMap(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
