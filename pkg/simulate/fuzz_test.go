package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// fuzzMaxPods keeps a fuzzed input's expansion (and solve) small.
const fuzzMaxPods = 300

// fuzzSeeds are the seed corpus of both targets: the test inputs of this
// package and a few hand-picked edge cases. They run as normal tests; `make
// fuzz` explores from them.
func fuzzSeeds(f *testing.F) {
	f.Helper()
	for _, dir := range []string{"testdata/golden", "testdata/basic", "testdata/disruption"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		var all []byte
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			all = append(append(all, data...), "\n---\n"...)
		}
		if len(all) > 0 {
			f.Add(all)
		}
	}
	for _, s := range []string{
		"",
		"---\n---\n",
		"kind: List\napiVersion: v1\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}]\n",
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {replicas: 3, selector: {}, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1e18}}}]}}, volumeClaimTemplates: [{metadata: {name: d}, spec: {resources: {requests: {storage: 1Gi}}}}]}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2147483647, selector: {}, template: {spec: {containers: [{name: c}]}}}\n",
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 4, completions: 2, template: {spec: {containers: [{name: c}]}}}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: b}}\nstatus: {allocatable: {cpu: 4, memory: 8Gi, pods: 10}}\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\nspec: {selector: {}, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}}}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: 7, resources: {requests: {cpu: x}}}]}\n",
		// Duplicate keys (refused, never last-wins), in YAML and JSON, and
		// resources the API server refuses (issue 34 item 4).
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 1\n        cpu: 100\n",
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "name": "q"}, "spec": {"containers": [{"name": "c"}]}}`,
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: \"0.5\", pods: 1e15, cpu: 2}, limits: {cpu: 1}}}]}\n",
		"apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: nc}\nspec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: []}\nstatus: {capacity: {cpu: -4}}\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzExpand reads any input and expands its workloads: no panic; an
// error is always bad input; the pods made are at most PodCount, named
// uniquely, and the listed pods come first, unchanged.
func FuzzExpand(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &Manifests{}
		if err := m.Read("in.yaml", data); err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("read: not a bad-input error: %v", err)
			}
			return
		}
		c, _, err := m.cluster(fuzzMaxPods, DefaultMaxNodePools, true)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("expand: not a bad-input error: %v", err)
			}
			return
		}
		if n := m.PodCount(); len(c.Pods) > n || n > fuzzMaxPods {
			t.Fatalf("%d pods made, PodCount %d, limit %d", len(c.Pods), n, fuzzMaxPods)
		}
		seen := map[string]bool{}
		for i, p := range c.Pods {
			key := p.Namespace + "/" + p.Name
			if seen[key] {
				t.Fatalf("pod %s made twice", key)
			}
			seen[key] = true
			if i < len(m.Pods) && p != m.Pods[i] {
				t.Fatalf("listed pod %d is not first", i)
			}
		}
	})
}

// FuzzSimulate runs the whole path of `dovetail simulate` (read, expand,
// solve over a small catalog, render in every format): no panic; errors
// are bad input; a plan renders, its JSON is what encoding/json prints,
// and no number in it is NaN or infinite.
func FuzzSimulate(f *testing.F) {
	catData, err := os.ReadFile("testdata/golden/catalog.json")
	if err != nil {
		f.Fatal(err)
	}
	types, err := ReadCatalog("catalog.json", catData, nil)
	if err != nil {
		f.Fatal(err)
	}
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &Manifests{}
		if err := m.Read("in.yaml", data); err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("read: not a bad-input error: %v", err)
			}
			return
		}
		res, err := Run(m, Options{Region: "r", InstanceTypes: cloneTypes(types), MaxPods: fuzzMaxPods})
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("simulate: not a bad-input error: %v", err)
			}
			return
		}
		res.DurationSeconds = 0.001
		if err := res.checkFinite(); err != nil {
			t.Fatal(err)
		}
		if g, ok := res.Gap(); ok && (math.IsNaN(g) || math.IsInf(g, 0)) {
			t.Fatalf("gap %v", g)
		}
		for _, format := range Formats() {
			var out bytes.Buffer
			if err := Render(&out, res, format); err != nil {
				t.Fatalf("render %s: %v", format, err)
			}
			if format == FormatJSON {
				want, err := json.MarshalIndent(res, "", "  ")
				if err != nil || !bytes.Equal(out.Bytes(), append(want, '\n')) {
					t.Fatalf("-o json differs from encoding/json (%v)", err)
				}
			}
		}
	})
}

// cloneTypes copies instance types (a solve must not see another's
// changes).
func cloneTypes(in []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, len(in))
	for i, it := range in {
		c := *it
		c.Offerings = append([]cloudprovider.Offering(nil), it.Offerings...)
		out[i] = &c
	}
	return out
}
