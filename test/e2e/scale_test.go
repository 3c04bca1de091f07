package e2e_test

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// simulatePlan plans files (with examples/) through `dovetail simulate`'s
// code path, for the emulator's region and subnet zones.
func simulatePlan(t testing.TB, files ...string) *simulate.Result {
	t.Helper()
	return simulatePlanWith(t, simulate.Options{}, files...)
}

// simulatePlanWith is simulatePlan with options (Region and Zones are
// always the stack's).
func simulatePlanWith(t testing.TB, opts simulate.Options, files ...string) *simulate.Result {
	t.Helper()
	examples, err := filepath.Glob(filepath.Join(repo, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := &simulate.Manifests{}
	for _, f := range append(examples, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Read(f, data); err != nil {
			t.Fatal(err)
		}
	}
	opts.Region, opts.Zones = emu().Options().Region, subnetZones(t)
	res, err := simulate.Run(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unschedulable) > 0 {
		t.Fatalf("simulate leaves pods unschedulable: %+v", res.Unschedulable)
	}
	return res
}

// subnetZones are the zones of the EC2NodeClass's subnets (the emulator
// seeds one subnet in each of the region's first three zones).
func subnetZones(t testing.TB) []string {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(t.Context(), client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var zones []string
	for _, sn := range nc.Status.Subnets {
		if !seen[sn.Zone] {
			seen[sn.Zone] = true
			zones = append(zones, sn.Zone)
		}
	}
	sort.Strings(zones)
	if len(zones) == 0 {
		t.Fatal("the EC2NodeClass has no subnets in its status")
	}
	return zones
}

// TestMixed500Pods: 500 pending pods across five Deployments (zone spread,
// hostname anti-affinity, arm64, amd64, a tainted team pool, a volume in
// one zone) all end Running on Ready NodeClaims, and the fleet costs within
// 10% of what `dovetail simulate` plans for the same manifests: as the pods
// start, or, where the kube-scheduler of a loaded machine bound a burst
// elsewhere than planned, once consolidation has settled the fleet.
func TestMixed500Pods(t *testing.T) {
	s := newScenario(t)
	// Every offering equally spare: price-capacity-optimized spot fleets
	// then take the cheapest pool, so the gap measured below is the
	// scheduler's, not the allocation strategy's (which may pick a pool up
	// to 10% dearer on the seeded capacity model). Cleared by the cleanup.
	if err := emu().SetCapacity(awsemu.CapacityRule{Spare: 50}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "mixed.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.Delete(t.Context(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "e2e-db-us-east-1a"}})
	})
	plan := simulatePlan(t, file)

	begin := time.Now()
	s.apply(data)
	s.waitRunning(500, 4*time.Minute)
	elapsed := time.Since(begin)

	eventually(t, time.Minute, "every NodeClaim Ready", func() (bool, error) {
		for _, nc := range nodeClaims(t) {
			if !nc.IsTrue(karpv1.ConditionTypeReady) {
				return false, fmt.Errorf("NodeClaim %s not Ready: %+v", nc.Name, nc.Status.Conditions)
			}
		}
		return true, nil
	})
	if err := consistent(t); err != nil {
		t.Error(err)
	}

	// The volume's pod runs in the volume's zone.
	var pods corev1.PodList
	if err := kube.List(t.Context(), &pods, client.InNamespace(s.ns), client.MatchingLabels{"app": "db"}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("db pods: %v %d", err, len(pods.Items))
	}
	node := &corev1.Node{}
	if err := kube.Get(t.Context(), client.ObjectKey{Name: pods.Items[0].Spec.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	if z := node.Labels[corev1.LabelTopologyZone]; z != "us-east-1a" {
		t.Errorf("the db pod runs in %s, its volume is in us-east-1a", z)
	}

	fleet := fleetPrice(t)
	gap := math.Abs(fleet-plan.TotalPricePerHour) / plan.TotalPricePerHour
	t.Logf("500 pods Running in %s on %d NodeClaims (simulate planned %d); fleet $%.4f/h, simulate $%.4f/h (gap %.1f%%)",
		elapsed.Round(100*time.Millisecond), len(nodeClaims(t)), len(plan.NodeClaims), fleet, plan.TotalPricePerHour, 100*gap)
	if gap > 0.10 {
		// The first pass plans simulate's fleet, but on a loaded machine
		// the kube-scheduler binds some pods of a burst elsewhere than
		// planned (its own scoring, before the hand-off reaches them), and
		// the pods left over get nodes of their own. Consolidation is what
		// repairs that in a cluster: let it run, and the fleet must come
		// back within 10% of the plan with every pod still Running.
		t.Logf("the fleet is %.1f%% away from the plan as the pods start; letting consolidation settle it", 100*gap)
		releaseConsolidation(t)
		eventually(t, 4*time.Minute, "the fleet within 10% of simulate's plan after consolidation", func() (bool, error) {
			running, pending, err := s.running()
			if err != nil {
				return false, err
			}
			f := fleetPrice(t)
			g := math.Abs(f-plan.TotalPricePerHour) / plan.TotalPricePerHour
			if running != 500 || g > 0.10 {
				return false, fmt.Errorf("%d pods Running, %d pending; the fleet costs $%.4f/h, %.1f%% away from simulate's $%.4f/h (want within 10%%)", running, pending, f, 100*g, plan.TotalPricePerHour)
			}
			t.Logf("settled: fleet $%.4f/h (gap %.1f%%) on %d NodeClaims", f, 100*g, len(nodeClaims(t)))
			return true, nil
		})
	}
	// Where the two differ: nodes and $/h per pool, type and capacity type.
	var planned, launched []offeringPrice
	for _, nc := range plan.NodeClaims {
		planned = append(planned, offeringPrice{nc.NodePool + " " + nc.InstanceType + "/" + nc.CapacityType, nc.PricePerHour})
	}
	for _, nc := range nodeClaims(t) {
		p, _ := nodeclaimutil.HourlyPrice(&nc)
		launched = append(launched, offeringPrice{nodeclaimutil.NodePool(&nc) + " " + nc.Labels[corev1.LabelInstanceTypeStable] + "/" + nc.Labels[karpv1.CapacityTypeLabelKey], p})
	}
	t.Logf("simulate: %s", mixByOffering(planned))
	t.Logf("fleet:    %s", mixByOffering(launched))
}

// offeringPrice is one node: its pool and offering, and its $/h.
type offeringPrice struct {
	key   string
	price float64
}

// mixByOffering sums nodes and $/h per pool and offering, sorted.
func mixByOffering(nodes []offeringPrice) string {
	type sum struct {
		n     int
		price float64
	}
	sums := map[string]*sum{}
	for _, o := range nodes {
		if sums[o.key] == nil {
			sums[o.key] = &sum{}
		}
		sums[o.key].n++
		sums[o.key].price += o.price
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s x%d $%.4f; ", k, sums[k].n, sums[k].price)
	}
	return b.String()
}
