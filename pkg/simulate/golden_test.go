package simulate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// fakeClock advances one millisecond per reading, so the reported solve
// time is always 1ms.
func fakeClock() func() time.Time {
	t := time.Unix(1_700_000_000, 0)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func goldenRun(t *testing.T) (*simulate.Manifests, *simulate.Result, []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "golden")
	input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	catData, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := &simulate.Manifests{}
	if err := m.Read("input.yaml", input); err != nil {
		t.Fatal(err)
	}
	types, err := simulate.ReadCatalog("catalog.json", catData, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate.Run(m, simulate.Options{Region: "test", InstanceTypes: types, Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	return m, res, catData
}

// TestGolden compares the three renderings of the golden scenario with
// testdata/golden/plan.{table,json,yaml}. Run with -update to rewrite them,
// then review the diff: TestGoldenFacts checks the facts that matter
// independently of the files.
func TestGolden(t *testing.T) {
	_, res, _ := goldenRun(t)
	for _, format := range simulate.Formats() {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := simulate.Render(&buf, res, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", "plan."+format)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from %s (run with -update and review the diff):\n%s", format, path, buf.String())
			}
		})
	}
}

// TestGoldenFacts derives the plan's key facts from the input and the
// catalog, independently of the engine and of the golden files.
func TestGoldenFacts(t *testing.T) {
	m, res, catData := goldenRun(t)

	// Every pending pod appears exactly once: on a new node, an existing
	// node, or as unschedulable. The pending pods are the listed pods plus
	// the Deployment's replicas.
	want := map[string]int{}
	for _, p := range m.Pods {
		want[p.Namespace+"/"+p.Name] = 1
	}
	for _, d := range m.Deployments {
		for i := range int(*d.Spec.Replicas) {
			want[d.Namespace+"/"+d.Name+"-"+string(rune('0'+i))] = 1
		}
	}
	seen := map[string]int{}
	for _, c := range res.NodeClaims {
		for _, p := range c.Pods {
			seen[p]++
		}
	}
	for _, n := range res.ExistingNodes {
		for _, p := range n.Pods {
			seen[p]++
		}
	}
	for _, u := range res.Unschedulable {
		seen[u.Pod]++
	}
	if len(seen) != len(want) {
		t.Errorf("pods in the plan: %v, want each of %v once", seen, want)
	}
	for p := range want {
		if seen[p] != 1 {
			t.Errorf("pod %s appears %d times", p, seen[p])
		}
	}

	// Prices come from the catalog file, the total is their sum, and each
	// node's offering is the cheapest available one among its options.
	var cat simulate.CatalogFile
	if err := json.Unmarshal(catData, &cat); err != nil {
		t.Fatal(err)
	}
	cheapest := func(typeName, capacityType string) (float64, string) {
		best, zone := math.Inf(1), ""
		for _, it := range cat.InstanceTypes {
			for _, o := range it.Offerings {
				if it.Name == typeName && o.CapacityType == capacityType && (o.Available == nil || *o.Available) && o.Price < best {
					best, zone = o.Price, o.Zone
				}
			}
		}
		return best, zone
	}
	sum := 0.0
	for _, c := range res.NodeClaims {
		if !slices.Contains(c.InstanceTypeOptions, c.InstanceType) {
			t.Errorf("%s: launched type %s is not among its options %v", c.Name, c.InstanceType, c.InstanceTypeOptions)
		}
		price, zone := cheapest(c.InstanceType, c.CapacityType)
		if c.PricePerHour != price || c.Zone != zone {
			t.Errorf("%s: %s %s in %s at %v, catalog's cheapest is %v in %s", c.Name, c.InstanceType, c.CapacityType, c.Zone, c.PricePerHour, price, zone)
		}
		sum += c.PricePerHour
	}
	if math.Abs(sum-res.TotalPricePerHour) > 1e-6 {
		t.Errorf("total %v != sum of node prices %v", res.TotalPricePerHour, sum)
	}
	if res.LowerBoundPricePerHour > res.TotalPricePerHour+1e-9 {
		t.Errorf("lower bound %v above the plan's price %v", res.LowerBoundPricePerHour, res.TotalPricePerHour)
	}

	// The API replicas must not share a node (required anti-affinity), and
	// each new node holds its pods plus the daemonset's 100m.
	requests := map[string]int64{}
	for _, p := range m.Pods {
		requests[p.Namespace+"/"+p.Name] = p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	}
	for _, d := range m.Deployments {
		for i := range int(*d.Spec.Replicas) {
			requests[d.Namespace+"/"+d.Name+"-"+string(rune('0'+i))] = d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
	}
	for _, c := range res.NodeClaims {
		api := 0
		cpu := int64(100)
		for _, p := range c.Pods {
			if len(p) > 8 && p[:9] == "shop/api-" {
				api++
			}
			cpu += requests[p]
		}
		if api > 1 {
			t.Errorf("%s holds %d API replicas", c.Name, api)
		}
		var capacity int64
		for _, it := range cat.InstanceTypes {
			if it.Name == c.InstanceType {
				q := it.Capacity[corev1.ResourceCPU]
				capacity = q.MilliValue()
			}
		}
		if cpu > capacity {
			t.Errorf("%s: %dm of cpu on a %dm %s", c.Name, cpu, capacity, c.InstanceType)
		}
	}
	if len(res.Unschedulable) != 1 || res.Unschedulable[0].Pod != "shop/huge" {
		t.Errorf("unschedulable = %+v, want only shop/huge (100 cpu fits no type)", res.Unschedulable)
	}
	if res.DurationSeconds != 0.001 {
		t.Errorf("duration = %v, want the fake clock's 1ms", res.DurationSeconds)
	}
}
