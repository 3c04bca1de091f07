//go:build e2elong

package e2e_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// TestConsolidationCrash20 is TestConsolidationCrash with 20 kills and an
// uninterrupted run of the same scenario first: after the kills the pool
// costs no more than the uninterrupted run's plus the price of its most
// expensive node. The pool's budget is 2 nodes (8 rounds of replacements),
// so that the 20 kills land inside the consolidation (with 50%, it ends
// after about 13).
func TestConsolidationCrash20(t *testing.T) {
	var baseline, dearest float64
	t.Run("uninterrupted", func(t *testing.T) {
		s := newScenario(t)
		before := consolidationCrashSetup(s, "crashu", "2")
		begin := time.Now()
		baseline = consolidationSettled(t, s, "crashu", before, 5*time.Minute)
		for _, nc := range poolClaims(t, "crashu") {
			p, _ := nodeclaimutil.HourlyPrice(&nc)
			dearest = max(dearest, p)
		}
		t.Logf("uninterrupted: 16 nodes replaced in %s; pool $%.4f/h, dearest node $%.4f/h", time.Since(begin).Round(time.Second), baseline, dearest)
	})
	if baseline == 0 {
		t.Fatal("no baseline")
	}
	t.Run("killed 20 times", func(t *testing.T) {
		s := newScenario(t)
		before := consolidationCrashSetup(s, "crashk", "2")
		begin := time.Now()
		killDuringConsolidation(t, s, "crashk", before, 20, 20)
		price := consolidationSettled(t, s, "crashk", before, 8*time.Minute)
		t.Logf("16 nodes replaced through 20 kills in %s; pool $%.4f/h (uninterrupted $%.4f/h)", time.Since(begin).Round(time.Second), price, baseline)
		if price > baseline+dearest+1e-9 {
			t.Errorf("pool $%.4f/h after the kills, more than the uninterrupted $%.4f/h + its dearest node $%.4f/h", price, baseline, dearest)
		}
	})
}

// TestNoChurn: pods spread by zone and by host with ScheduleAnyway, and a
// descheduler-like loop evicting one pod from the fullest node every 3 s
// for 3 minutes, with consolidation on (consolidateAfter 10s). No
// NodeClaim is created and removed again within 2 minutes (real time, 20
// scaled minutes: stricter than the 2 scaled minutes asked), and the
// pool's node count stays within one node of where it started.
//
// Consolidation has little to do here (every node is full enough);
// TestNoChurnWhileConsolidating is the same loop while it acts.
func TestNoChurn(t *testing.T) {
	noChurn(t, "churn", 0)
}

// TestNoChurnWhileConsolidating: the loop of TestNoChurn starts together
// with a scale-down from 24 to 12 pods, so consolidation acts during the
// evictions (emptied nodes, and the nodes each eviction leaves emptier).
// Consolidation must remove nodes (it acted), and the evictions must not
// start a loop: no NodeClaim created and removed again within 2 minutes,
// none created but a disruption command's replacements (nothing for
// provisioning to launch: every evicted pod finds room), and the pool
// never above the node count it started with.
func TestNoChurnWhileConsolidating(t *testing.T) {
	noChurn(t, "churnc", 12)
}

// noChurn runs the descheduler loop on a pool of 24 spread pods; with
// scaleTo > 0 the Deployment is scaled to it as the loop starts.
func noChurn(t *testing.T, pool string, scaleTo int32) {
	const pods = 24
	s := newScenario(t)
	s.pool(pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("10s")
	})
	labels := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	s.deployment("web", pods, "500m", "512Mi", onPool(pool, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: labels},
			{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: labels},
		}
	}))
	s.waitRunning(pods, 4*time.Minute)

	// Consolidation settles first: the pool's NodeClaims unchanged for 30 s.
	last, since := "", time.Now()
	eventually(t, 4*time.Minute, "the pool steady for 30 s", func() (bool, error) {
		var names []string
		for _, nc := range poolClaims(t, pool) {
			names = append(names, nc.Name)
		}
		sort.Strings(names)
		key := fmt.Sprint(names)
		if key != last {
			last, since = key, time.Now()
		}
		if time.Since(since) < 30*time.Second {
			return false, fmt.Errorf("%d NodeClaims, changed %s ago", len(names), time.Since(since).Round(time.Second))
		}
		return true, nil
	})
	start := len(poolClaims(t, pool))

	w := watchFleet(t, pool, 0)
	begin := time.Now()
	want := int32(pods)
	if scaleTo > 0 {
		want = scaleTo
		s.scale("web", scaleTo)
	}
	evicted := 0
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for time.Since(begin) < 3*time.Minute {
		<-tick.C
		var list corev1.PodList
		if err := kube.List(s.ctx, &list, client.InNamespace(s.ns)); err != nil {
			t.Fatal(err)
		}
		byNode := map[string][]string{}
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p.Name)
			}
		}
		fullest := ""
		for n, ps := range byNode {
			if fullest == "" || len(ps) > len(byNode[fullest]) || (len(ps) == len(byNode[fullest]) && n < fullest) {
				fullest = n
			}
		}
		if fullest == "" {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: byNode[fullest][0]}}
		if err := cs.PolicyV1().Evictions(s.ns).Evict(s.ctx, ev); err == nil {
			evicted++
		}
	}
	s.waitRunning(int(want), 2*time.Minute)
	w.stop()
	w.mu.Lock()
	lo, hi := start, start
	for _, c := range w.counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	w.mu.Unlock()
	end := len(poolClaims(t, pool))
	created := w.createdSince(begin)
	extra := w.createdBeyondReplacements(begin)
	churned := w.churned(begin, 2*time.Minute)
	t.Logf("%d evictions in %s; pool %d nodes at the start, between %d and %d meanwhile, %d at the end; %d NodeClaims created meanwhile (%d not a command's replacement)",
		evicted, time.Since(begin).Round(time.Second), start, lo, hi, end, len(created), len(extra))
	if evicted < 30 {
		t.Errorf("only %d evictions: the loop did not run", evicted)
	}
	for _, c := range churned {
		t.Errorf("churn: NodeClaim %s created and removed again within 2 minutes", c)
	}
	if scaleTo == 0 {
		if hi-lo > 1 {
			t.Errorf("the node count moved between %d and %d during the loop (started at %d)", lo, hi, start)
		}
		return
	}
	if end >= start {
		t.Errorf("consolidation did not act: %d nodes at the end, %d at the start", end, start)
	}
	if len(extra) > 0 {
		t.Errorf("NodeClaims created during the loop beyond the commands' replacements: %v", extra)
	}
	if hi > start {
		t.Errorf("the pool grew to %d nodes during the loop (started at %d)", hi, start)
	}
}
