package simulate_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// staticPool is a static NodePool of on-demand c6i.large or c6i.xlarge
// nodes; limits is its spec.limits ("" for none).
func staticPool(replicas int, limits string) string {
	doc := fmt.Sprintf(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fixed}
spec:
  replicas: %d
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c6i.xlarge, c6i.large]}
`, replicas)
	if limits != "" {
		doc += "  limits: " + limits + "\n"
	}
	return doc
}

// A dynamic pool beside the static one, for pods that do not fit on it.
const dynamicPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i]}
`

func smallDeployment(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: small}
spec:
  replicas: %d
  selector: {matchLabels: {app: small}}
  template:
    metadata: {labels: {app: small}}
    spec:
      containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
`, replicas)
}

// staticNode is a node of the static pool, c6i.large in us-east-1a.
func staticNode(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  creationTimestamp: "2026-11-20T09:00:00Z"
  labels: {kubernetes.io/hostname: %[1]s, kubernetes.io/arch: amd64, kubernetes.io/os: linux, node.kubernetes.io/instance-type: c6i.large, topology.kubernetes.io/zone: us-east-1a, karpenter.sh/nodepool: fixed, karpenter.sh/capacity-type: on-demand, karpenter.sh/initialized: "true"}
spec: {providerID: "aws:///us-east-1a/i-%[1]s"}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "29"}
  allocatable: {cpu: 1930m, memory: 3Gi, pods: "29"}
  conditions: [{type: Ready, status: "True"}]
`, name)
}

func staticBoundPod(name, node, cpu string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  containers: [{name: c, image: i, resources: {requests: {cpu: %s, memory: 256Mi}}}]
status: {phase: Running}
`, name, node, cpu)
}

func runStatic(t *testing.T, docs ...string) *simulate.Result {
	t.Helper()
	m := &simulate.Manifests{}
	if err := m.Read("in.yaml", []byte(strings.Join(append([]string{nodeClassDoc}, docs...), "---\n"))); err != nil {
		t.Fatal(err)
	}
	r, err := simulate.Run(m, simulate.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func staticPoolResult(t *testing.T, r *simulate.Result) simulate.StaticPool {
	t.Helper()
	if len(r.StaticPools) != 1 || r.StaticPools[0].NodePool != "fixed" {
		t.Fatalf("static pools %+v, want fixed's", r.StaticPools)
	}
	return r.StaticPools[0]
}

func odPrice(t *testing.T, typ string) float64 {
	t.Helper()
	p, ok := catalog.Builtin().OnDemandPrice("us-east-1", typ)
	if !ok || p <= 0 {
		t.Fatalf("no on-demand price for %s", typ)
	}
	return p
}

// A static pool of 3 replicas and no nodes plans 3 NodeClaims of the
// cheapest type it allows (c6i.large, not c6i.xlarge), marked static, in
// the total; the pending pods land on them, so the dynamic pool launches
// nothing.
func TestSimulateStaticPoolLaunchesReplicas(t *testing.T) {
	r := runStatic(t, staticPool(3, ""), dynamicPool, smallDeployment(4))
	sp := staticPoolResult(t, r)
	if sp.Replicas != 3 || sp.Has != 0 || sp.Launched != 3 || sp.Limited != "" || len(sp.Removed) != 0 {
		t.Errorf("static pool %+v, want 3 launched", sp)
	}
	large := odPrice(t, "c6i.large")
	pods, total := 0, 0.0
	for _, nc := range r.NodeClaims {
		if !nc.Static || nc.NodePool != "fixed" {
			t.Errorf("NodeClaim %s of %s (static %v): the pods fit on the static nodes", nc.Name, nc.NodePool, nc.Static)
			continue
		}
		if nc.InstanceType != "c6i.large" || nc.CapacityType != "on-demand" || nc.Zone != "us-east-1a" || nc.PricePerHour != large {
			t.Errorf("static NodeClaim %+v, want on-demand c6i.large in us-east-1a at $%v", nc, large)
		}
		pods += len(nc.Pods)
		total += nc.PricePerHour
	}
	if len(r.NodeClaims) != 3 || pods != 4 || len(r.Unschedulable) != 0 || len(r.ExistingNodes) != 0 {
		t.Errorf("%d NodeClaims with %d pods, %d unschedulable, existing %+v: want the 4 pods on the 3 static NodeClaims",
			len(r.NodeClaims), pods, len(r.Unschedulable), r.ExistingNodes)
	}
	if d := r.TotalPricePerHour - 3*large; d > 1e-6 || d < -1e-6 {
		t.Errorf("total $%v, want the 3 static nodes' $%v", r.TotalPricePerHour, 3*large)
	}
	var table bytes.Buffer
	if err := simulate.Render(&table, r, simulate.FormatTable); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	if strings.Count(out, "fixed (static)") != 3 || !strings.Contains(out, "STATIC NODEPOOL") {
		t.Errorf("table does not mark the 3 static NodeClaims or list the pool:\n%s", out)
	}
	var js bytes.Buffer
	if err := simulate.Render(&js, r, simulate.FormatJSON); err != nil {
		t.Fatal(err)
	}
	if strings.Count(js.String(), `"static": true`) != 3 || !strings.Contains(js.String(), `"staticPools"`) {
		t.Errorf("JSON does not mark the static NodeClaims:\n%s", js.String())
	}
}

// Without static pools the plan has no static section and the pods go to
// the dynamic pool (the control for the test above).
func TestSimulateWithoutStaticPool(t *testing.T) {
	r := runStatic(t, dynamicPool, smallDeployment(4))
	if len(r.StaticPools) != 0 || len(r.NodeClaims) == 0 {
		t.Fatalf("static pools %+v, %d NodeClaims", r.StaticPools, len(r.NodeClaims))
	}
	for _, nc := range r.NodeClaims {
		if nc.Static || nc.NodePool != "general" {
			t.Errorf("NodeClaim %+v, want general's", nc)
		}
	}
}

// The nodes the pool has count: 1 node of 3 replicas leaves 2 to launch;
// limits.nodes cuts them further, and says so.
func TestSimulateStaticPoolCountsNodesAndLimits(t *testing.T) {
	r := runStatic(t, staticPool(3, ""), staticNode("s1"))
	if sp := staticPoolResult(t, r); sp.Has != 1 || sp.Launched != 2 || len(r.NodeClaims) != 2 {
		t.Errorf("static pool %+v with %d NodeClaims, want 1 had and 2 launched", sp, len(r.NodeClaims))
	}
	for _, nc := range r.NodeClaims {
		if nc.Name == "s1" {
			t.Errorf("a static NodeClaim is named like the existing node: %+v", nc)
		}
	}
	r = runStatic(t, staticPool(3, "{nodes: 2}"), staticNode("s1"))
	sp := staticPoolResult(t, r)
	if sp.Has != 1 || sp.Launched != 1 || len(r.NodeClaims) != 1 || !strings.Contains(sp.Limited, "limits.nodes 2") {
		t.Errorf("static pool %+v with %d NodeClaims, want 1 launched, limited by limits.nodes 2", sp, len(r.NodeClaims))
	}
	r = runStatic(t, staticPool(3, "{nodes: 1}"), staticNode("s1"))
	if sp := staticPoolResult(t, r); sp.Launched != 0 || len(r.NodeClaims) != 0 || sp.Limited == "" {
		t.Errorf("static pool %+v with %d NodeClaims, want none launched at the limit", sp, len(r.NodeClaims))
	}
}

// Above its replicas the pool removes as the static controller does
// (disruption.ScaleDown): the empty node first; at 0 replicas the busy one
// too, and its pod is planned again, here on the dynamic pool.
func TestSimulateStaticPoolScalesDown(t *testing.T) {
	nodes := []string{staticNode("busy"), staticNode("idle"), staticBoundPod("work", "busy", "500m")}
	r := runStatic(t, append([]string{staticPool(1, ""), dynamicPool}, nodes...)...)
	sp := staticPoolResult(t, r)
	if sp.Has != 2 || sp.Launched != 0 || len(sp.Removed) != 1 || sp.Removed[0].Name != "idle" || sp.Removed[0].Rank != "Empty" {
		t.Errorf("static pool %+v, want idle removed as Empty", sp)
	}
	if len(r.NodeClaims) != 0 || len(r.Unschedulable) != 0 {
		t.Errorf("NodeClaims %+v, unschedulable %+v: nothing to re-plan", r.NodeClaims, r.Unschedulable)
	}
	r = runStatic(t, append([]string{staticPool(0, ""), dynamicPool}, nodes...)...)
	sp = staticPoolResult(t, r)
	if len(sp.Removed) != 2 || sp.Removed[0].Name != "idle" || sp.Removed[1].Name != "busy" || sp.Removed[1].Rank != "CheapestToDisrupt" {
		t.Errorf("removed %+v, want idle then busy", sp.Removed)
	}
	if len(r.NodeClaims) != 1 || r.NodeClaims[0].NodePool != "general" || len(r.NodeClaims[0].Pods) != 1 || r.NodeClaims[0].Pods[0] != "default/work" {
		t.Errorf("NodeClaims %+v, want default/work re-planned on a general NodeClaim", r.NodeClaims)
	}
}

// staticClaim is the NodeClaim of static node name, drifted or not.
func staticClaimDoc(name string, drifted bool) string {
	conds := `[{type: Initialized, status: "True", reason: Initialized, lastTransitionTime: "2026-11-20T09:01:00Z"}`
	if drifted {
		conds += `, {type: Drifted, status: "True", reason: NodePoolDrifted, lastTransitionTime: "2026-12-01T09:00:00Z"}`
	}
	return fmt.Sprintf(`apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: claim-%[1]s
  creationTimestamp: "2026-11-20T09:00:00Z"
  labels: {karpenter.sh/nodepool: fixed, node.kubernetes.io/instance-type: c6i.large, karpenter.sh/capacity-type: on-demand, topology.kubernetes.io/zone: us-east-1a}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [fixed]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [c6i.large]}
status:
  providerID: "aws:///us-east-1a/i-%[1]s"
  nodeName: %[1]s
  lastPodEventTime: "2026-12-01T08:00:00Z"
  conditions: %[2]s]
`, name, conds)
}

// simulate --disruption never consolidates a static pool's nodes: an
// empty one is kept with StaticPool, saying the replicas and the count;
// a drifted one is still replaced (removed: the static controller
// launches its successor).
func TestRunDisruptionStaticPool(t *testing.T) {
	r := runDisruptionDocs(t, nodeClassDoc, staticPool(2, "")+"  disruption: {budgets: [{nodes: \"100%\"}]}\n",
		staticNode("s1"), staticClaimDoc("s1", false), staticNode("s2"), staticClaimDoc("s2", true))
	if len(r.Kept) != 1 || r.Kept[0].Node != "s1" || r.Kept[0].Code != "StaticPool" ||
		!strings.Contains(r.Kept[0].Reason, "spec.replicas 2, has 2 nodes") {
		t.Errorf("kept %+v, want s1 kept as StaticPool with replicas 2 and 2 nodes", r.Kept)
	}
	if len(r.Commands) != 1 || r.Commands[0].Reason != "Drifted" || len(r.Commands[0].Nodes) != 1 || r.Commands[0].Nodes[0] != "s2" {
		t.Errorf("commands %+v, want s2 replaced for drift", r.Commands)
	}
}

// simulate --disruption launches a static pool's missing replicas as the
// static controller does (the cheapest type the pool allows, within
// limits.nodes), lists them with their price apart from the fleet's, and
// plans with them in flight.
func TestRunDisruptionStaticPoolLaunchesMissing(t *testing.T) {
	run := func(limits string) *simulate.DisruptionResult {
		t.Helper()
		return runDisruptionDocs(t, nodeClassDoc, staticPool(3, limits), staticNode("s1"), staticClaimDoc("s1", false))
	}
	price := odPrice(t, "c6i.large")
	r := run("")
	if len(r.StaticPools) != 1 || r.StaticPools[0].Replicas != 3 || r.StaticPools[0].Has != 1 || r.StaticPools[0].Launched != 2 {
		t.Fatalf("static pools %+v, want fixed: replicas 3, has 1, launched 2", r.StaticPools)
	}
	if len(r.StaticNodeClaims) != 2 || r.StaticPricePerHour < 2*price-1e-4 || r.StaticPricePerHour > 2*price+1e-4 {
		t.Fatalf("static NodeClaims %+v at $%g/h, want 2 c6i.large at $%g/h", r.StaticNodeClaims, r.StaticPricePerHour, 2*price)
	}
	for _, nc := range r.StaticNodeClaims {
		if nc.NodePool != "fixed" || nc.InstanceType != "c6i.large" || nc.CapacityType != "on-demand" {
			t.Errorf("static NodeClaim %+v, want fixed's on-demand c6i.large", nc)
		}
	}
	var out bytes.Buffer
	if err := simulate.RenderDisruption(&out, r, simulate.FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"STATIC NODEPOOL", "Static NodePools launch 2 NodeClaims for missing replicas"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// limits.nodes 2 leaves room for one.
	r = run("{nodes: \"2\"}")
	if len(r.StaticPools) != 1 || r.StaticPools[0].Launched != 1 || !strings.Contains(r.StaticPools[0].Limited, "limits.nodes") || len(r.StaticNodeClaims) != 1 {
		t.Errorf("with limits.nodes 2: %+v, %d NodeClaims; want 1 launched, limited by limits.nodes", r.StaticPools, len(r.StaticNodeClaims))
	}
}

// runDisruptionDocs runs simulate --disruption on the documents.
func runDisruptionDocs(t *testing.T, docs ...string) *simulate.DisruptionResult {
	t.Helper()
	m := &simulate.Manifests{}
	if err := m.Read("c.yaml", []byte(strings.Join(docs, "---\n"))); err != nil {
		t.Fatal(err)
	}
	r, err := simulate.RunDisruption(m, simulate.Options{Region: "us-east-1"}, disruptionNow)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A NodeOverlay applies to a static pool as to a dynamic one: with
// c6i.xlarge at $0.01/h the static NodeClaims are c6i.xlarge at that price
// (the controller's choice at the overlaid prices), not the cloud's
// cheaper c6i.large.
func TestSimulateStaticPoolUsesOverlays(t *testing.T) {
	r := runStatic(t, staticPool(2, ""), `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: xlarge-deal}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c6i.xlarge]}]
  price: "0.01"
`)
	if sp := staticPoolResult(t, r); sp.Launched != 2 {
		t.Fatalf("static pool %+v, want 2 launched", sp)
	}
	for _, nc := range r.NodeClaims {
		if nc.InstanceType != "c6i.xlarge" || nc.PricePerHour != 0.01 {
			t.Errorf("static NodeClaim %s: %s at $%v, want c6i.xlarge at the overlaid $0.01", nc.Name, nc.InstanceType, nc.PricePerHour)
		}
	}
	if d := r.TotalPricePerHour - 0.02; d > 1e-9 || d < -1e-9 {
		t.Errorf("total $%v, want 2 x $0.01", r.TotalPricePerHour)
	}
}
