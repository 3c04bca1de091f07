package simulate_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// The pool and workload of the overlay tests: on-demand c, m and r of
// generation 6, 24 pods of 1 cpu and 3Gi.
const overlayPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c6i, m6i, r6i]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 24
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: i, resources: {requests: {cpu: "1", memory: 3Gi}}}]
`

func overlayDoc(requirements, adjustment string) string {
	return `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: cheap}
spec:
  requirements: ` + requirements + `
  priceAdjustment: "` + adjustment + `"
`
}

func simulateOverlay(t *testing.T, docs ...string) *simulate.Result {
	t.Helper()
	m := &simulate.Manifests{}
	if err := m.Read("in.yaml", []byte(strings.Join(append([]string{nodeClassDoc, overlayPool}, docs...), "---\n"))); err != nil {
		t.Fatal(err)
	}
	r, err := simulate.Run(m, simulate.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	r.DurationSeconds = 0
	return r
}

func families(r *simulate.Result) map[string]int {
	out := map[string]int{}
	for _, nc := range r.NodeClaims {
		out[strings.SplitN(nc.InstanceType, ".", 2)[0]]++
	}
	return out
}

// An overlay of -90% on one family the plan would not choose makes the plan
// use only that family; the same overlay with requirements that match none
// of the pool's offerings (another capacity type) changes nothing.
func TestSimulateOverlayOnOneFamily(t *testing.T) {
	base := simulateOverlay(t)
	if len(base.Unschedulable) > 0 || len(base.NodeClaims) == 0 {
		t.Fatalf("baseline plan: %d claims, %d unschedulable", len(base.NodeClaims), len(base.Unschedulable))
	}
	if fam := families(base); fam["r6i"] == len(base.NodeClaims) {
		t.Fatalf("the baseline already uses only r6i (%v): the test proves nothing", fam)
	}

	cheap := simulateOverlay(t, overlayDoc(`[{key: karpenter.k8s.aws/instance-family, operator: In, values: [r6i]}]`, "-90%"))
	if fam := families(cheap); fam["r6i"] != len(cheap.NodeClaims) || len(cheap.NodeClaims) == 0 || len(cheap.Unschedulable) > 0 {
		t.Fatalf("with r6i at -90%%: families %v, %d unschedulable", fam, len(cheap.Unschedulable))
	}
	if cheap.TotalPricePerHour >= base.TotalPricePerHour {
		t.Errorf("the discounted plan costs $%g/h, the baseline $%g/h", cheap.TotalPricePerHour, base.TotalPricePerHour)
	}
	if len(cheap.Warnings) != len(base.Warnings) {
		t.Errorf("warnings %q", cheap.Warnings)
	}

	for _, reqs := range []string{
		`[{key: karpenter.k8s.aws/instance-family, operator: In, values: [r6i]}, {key: karpenter.sh/capacity-type, operator: In, values: [spot]}]`,
		`[{key: karpenter.sh/nodepool, operator: In, values: [other]}]`,
		`[{key: karpenter.k8s.aws/instance-family, operator: In, values: [x2idn]}]`,
	} {
		same := simulateOverlay(t, overlayDoc(reqs, "-90%"))
		if !reflect.DeepEqual(same.NodeClaims, base.NodeClaims) || same.TotalPricePerHour != base.TotalPricePerHour {
			t.Errorf("overlay %s matching nothing changed the plan: %v, baseline %v", reqs, families(same), families(base))
		}
	}
}

// An overlay whose price would go negative is left out with a notice
// naming it and the field; the plan is the one without it.
func TestSimulateNegativeOverlayLeftOut(t *testing.T) {
	base := simulateOverlay(t)
	neg := simulateOverlay(t, overlayDoc(`[{key: karpenter.k8s.aws/instance-family, operator: In, values: [r6i]}]`, "-50"))
	if !reflect.DeepEqual(neg.NodeClaims, base.NodeClaims) {
		t.Errorf("a negative overlay changed the plan: %v, baseline %v", families(neg), families(base))
	}
	if len(neg.Warnings) == 0 || !strings.Contains(strings.Join(neg.Warnings, "\n"), `NodeOverlay "cheap" not applied (NegativePrice): spec.priceAdjustment`) {
		t.Errorf("warnings %q", neg.Warnings)
	}
}

// An adjustment the CRD's pattern refuses is an input error naming the
// file, the object and the field.
func TestSimulateBadOverlayRefused(t *testing.T) {
	m := &simulate.Manifests{}
	err := m.Read("in.yaml", []byte(nodeClassDoc+"---\n"+overlayPool+"---\n"+overlayDoc(`[]`, "-ten%")))
	if err == nil || !strings.Contains(err.Error(), "spec.priceAdjustment") || !strings.Contains(err.Error(), `NodeOverlay "cheap"`) || !strings.Contains(err.Error(), "in.yaml") {
		t.Fatalf("err = %v", err)
	}
}

// The example overlays read as the API server would accept them and all
// apply to the example pools.
func TestSimulateExampleOverlays(t *testing.T) {
	m := &simulate.Manifests{}
	for _, f := range []string{"ec2nodeclass.yaml", "nodepool-arm64-default.yaml", "nodepool-multi-default.yaml", "nodepool-team-b.yaml", "overlays/nodeoverlays.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Read(f, data); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.NodeOverlays) != 3 {
		t.Fatalf("read %d overlays, want 3", len(m.NodeOverlays))
	}
	r, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "NodeOverlay") {
			t.Errorf("warning: %s", w)
		}
	}
}
