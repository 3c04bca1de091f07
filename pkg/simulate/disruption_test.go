package simulate_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

var disruptionNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func readFile(t *testing.T, path string) *simulate.Manifests {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := &simulate.Manifests{}
	if err := m.Read(path, data); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDisruptionInput checks the planner's input built from the docs'
// cluster file: pools, node states (NodeClaim facts, label fallbacks,
// adoption, prices) and PDBs.
func TestDisruptionInput(t *testing.T) {
	m := readFile(t, "testdata/disruption/cluster.yaml")
	in, _, err := simulate.DisruptionInput(m, simulate.Options{Region: "us-east-1"}, disruptionNow)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Now.Equal(disruptionNow) || in.Cluster == nil || len(in.Cluster.Nodes) != 9 {
		t.Fatalf("now %v, cluster nodes %d", in.Now, len(in.Cluster.Nodes))
	}
	pp := in.Pools["general"]
	if pp.ConsolidationPolicy != disruption.PolicyWhenEmptyOrUnderutilized || pp.ConsolidateAfter == nil || *pp.ConsolidateAfter != 5*time.Minute ||
		pp.ExpireAfter == nil || *pp.ExpireAfter != 720*time.Hour || len(pp.Budgets) != 1 || pp.Budgets[0].Nodes != "50%" {
		t.Errorf("pool policy = %+v", pp)
	}
	cat := catalog.Builtin()
	od := func(typ string) float64 { p, _ := cat.OnDemandPrice("us-east-1", typ); return p }
	spot := func(typ, zone string) float64 { return catalog.SpotPrice("us-east-1", zone, typ, od(typ)) }
	tests := map[string]struct {
		pool          string
		adopted       bool
		claim         string
		capType, zone string
		price         float64
		lastPodEvent  time.Time
		initialized   bool
	}{
		"empty-a":  {pool: "general", claim: "general-empty-a", capType: "on-demand", zone: "us-east-1a", price: od("m5.large"), lastPodEvent: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), initialized: true},
		"shop-a":   {pool: "general", claim: "general-shop-a", capType: "spot", zone: "us-east-1c", price: spot("m5.xlarge", "us-east-1c"), lastPodEvent: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), initialized: true},
		"fresh-a":  {pool: "general", claim: "general-fresh-a", capType: "on-demand", zone: "us-east-1c", price: od("m5.xlarge"), lastPodEvent: time.Date(2026, 12, 1, 9, 58, 0, 0, time.UTC), initialized: true},
		"legacy-a": {pool: "general", adopted: true, capType: "spot", zone: "us-east-1a", price: spot("c5.xlarge", "us-east-1a"), lastPodEvent: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), initialized: true},
		"gpu-a":    {pool: "", capType: "on-demand", zone: "us-east-1a", price: od("m5.xlarge"), lastPodEvent: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), initialized: true},
	}
	for name, want := range tests {
		st, ok := in.Nodes[name]
		if !ok {
			t.Errorf("%s: no node state", name)
			continue
		}
		if st.NodePool != want.pool || st.Adopted != want.adopted || st.NodeClaim != want.claim || st.CapacityType != want.capType ||
			st.Zone != want.zone || st.PricePerHour != want.price || want.price == 0 || !st.LastPodEvent.Equal(want.lastPodEvent) ||
			st.Initialized != want.initialized || st.NotReady || st.MarkedForDeletion || st.DoNotDisrupt {
			t.Errorf("%s: state = %+v, want %+v", name, st, want)
		}
	}
	if st := in.Nodes["fresh-a"]; st.CreationReason != "underutilized" || strings.Join(st.ReplacedTypes, ",") != "m5.2xlarge,c5.xlarge" {
		t.Errorf("fresh-a creation reason %q, replaced types %v: want underutilized, [m5.2xlarge c5.xlarge] from its NodeClaim's annotations", st.CreationReason, st.ReplacedTypes)
	}
	if d := in.Nodes["old-a"].Drifted; d != "NodeClassDrift" {
		t.Errorf("old-a drift = %q, want its Drifted condition's reason", d)
	}
	for _, en := range in.Cluster.Nodes {
		if en.Node.Name == "legacy-a" && en.NodePool != "general" {
			t.Errorf("adopted node's snapshot pool = %q", en.NodePool)
		}
	}
	// The pool's usage counts its 7 labelled nodes and the adopted one.
	for _, np := range in.Cluster.NodePools {
		if np.Name != "general" {
			continue
		}
		if n := np.Usage["nodes"]; n.Value() != 8 {
			t.Errorf("general's usage counts %d nodes, want 8 (7 labelled + legacy-a)", n.Value())
		}
		// Capacity: empty-a and old-a 2 vCPU, big-a and big-b 8, batch-a,
		// shop-a and fresh-a 4, plus legacy-a's 4.
		if c := np.Usage["cpu"]; c.Value() != 2+2+8+8+4+4+4+4 {
			t.Errorf("general's usage cpu = %s", c.String())
		}
	}
	if len(in.PDBs) != 1 || in.PDBs[0].Name != "checkout" || in.PDBs[0].DisruptionsAllowed != 0 {
		t.Errorf("PDBs = %+v, want shop/checkout allowing 0 (2 pods, minAvailable 2)", in.PDBs)
	}
}

// TestDisruptionInputNodeStates covers the facts the docs' file does not:
// drift, deletion, do-not-disrupt, NotReady, nominations, annotated
// offerings and prices, adoption by weight and taints.
func TestDisruptionInputNodeStates(t *testing.T) {
	const head = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec: {amiSelectorTerms: [{alias: al2023@latest}], role: r, subnetSelectorTerms: [{tags: {a: b}}], securityGroupSelectorTerms: [{tags: {a: b}}]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: low}
spec:
  weight: 5
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
  disruption: {consolidateAfter: Never}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: high}
spec:
  weight: 50
  template:
    metadata: {labels: {team: a}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
      taints: [{key: team, value: a, effect: NoSchedule}]
      terminationGracePeriod: 1h
      expireAfter: Never
  disruption: {consolidationPolicy: WhenEmpty, budgets: []}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: high-x
  labels: {karpenter.sh/nodepool: high}
  annotations: {dovetail.sh/price-per-hour: "0.5", dovetail.sh/offering: m5.large/us-east-1b/spot, karpenter.sh/do-not-disrupt: "true"}
  deletionTimestamp: "2026-12-01T09:00:00Z"
  finalizers: [karpenter.sh/termination]
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [high]}]
status:
  nodeName: x
  conditions:
  - {type: Initialized, status: "True", reason: Initialized, lastTransitionTime: "2026-11-01T00:00:00Z"}
  - {type: Drifted, status: "True", reason: RequirementsDrifted, lastTransitionTime: "2026-11-01T00:00:00Z"}
---
apiVersion: v1
kind: Node
metadata: {name: x, labels: {node.kubernetes.io/instance-type: m5.xlarge}}
status:
  conditions: [{type: Ready, status: "False"}]
---
apiVersion: v1
kind: Node
metadata: {name: team-a, labels: {node.kubernetes.io/instance-type: m5.large, kubernetes.io/arch: amd64, team: a, eks.amazonaws.com/capacityType: ON_DEMAND}}
spec: {taints: [{key: team, value: a, effect: NoSchedule}, {key: node.kubernetes.io/not-ready, effect: NoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: no-team, labels: {node.kubernetes.io/instance-type: m5.large, kubernetes.io/arch: amd64, eks.amazonaws.com/capacityType: ON_DEMAND}}
---
apiVersion: v1
kind: Node
metadata: {name: arm, labels: {node.kubernetes.io/instance-type: m6g.large, kubernetes.io/arch: arm64}, annotations: {karpenter.sh/do-not-disrupt: "true"}}
---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec: {containers: [{name: c}]}
status: {nominatedNodeName: no-team}
`
	m := &simulate.Manifests{}
	if err := m.Read("c.yaml", []byte(head)); err != nil {
		t.Fatal(err)
	}
	in, _, err := simulate.DisruptionInput(m, simulate.Options{Region: "us-east-1"}, disruptionNow)
	if err != nil {
		t.Fatal(err)
	}
	x := in.Nodes["x"]
	if x.NodeClaim != "high-x" || x.NodePool != "high" || x.Adopted || !x.Initialized || !x.NotReady || !x.MarkedForDeletion ||
		!x.DoNotDisrupt || x.Drifted != "RequirementsDrifted" || x.InstanceType != "m5.large" || x.Zone != "us-east-1b" ||
		x.CapacityType != "spot" || x.PricePerHour != 0.5 || x.TerminationGracePeriod == nil || *x.TerminationGracePeriod != time.Hour ||
		!x.LastPodEvent.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("x = %+v", x)
	}
	if a := in.Nodes["team-a"]; a.NodePool != "high" || !a.Adopted || a.CapacityType != "on-demand" {
		t.Errorf("team-a = %+v, want adopted by high (weight 50, its taint and label)", a)
	}
	if n := in.Nodes["no-team"]; n.NodePool != "low" || !n.Adopted || n.NominatedPods != 1 || !n.NominatedUntil.Equal(disruptionNow.Add(simulate.NominationHold)) {
		t.Errorf("no-team = %+v, want adopted by low (no team taint), 1 nominated pod", n)
	}
	if a := in.Nodes["arm"]; a.NodePool != "" || a.Adopted || !a.DoNotDisrupt {
		t.Errorf("arm = %+v, want unmanaged (no pool takes arm64 m6g), do-not-disrupt", a)
	}
	if p := in.Pools["low"]; p.ConsolidateAfter != nil || p.Budgets != nil || p.ExpireAfter == nil {
		t.Errorf("low = %+v, want consolidateAfter Never, default budgets, default expireAfter", p)
	}
	if p := in.Pools["high"]; p.ConsolidationPolicy != "WhenEmpty" || p.ConsolidateAfter == nil || *p.ConsolidateAfter != 0 || p.Budgets == nil || len(p.Budgets) != 0 || p.ExpireAfter != nil {
		t.Errorf("high = %+v, want WhenEmpty, 0s, no budget, never expires", p)
	}
}

func TestDisruptionInputBadAnnotations(t *testing.T) {
	in := `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: c1
  annotations: {dovetail.sh/price-per-hour: cheap, dovetail.sh/offering: m5.large}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: []
status: {nodeName: n1}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
`
	m := &simulate.Manifests{}
	if err := m.Read("c.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	_, _, err := simulate.DisruptionInput(m, simulate.Options{Region: "us-east-1"}, disruptionNow)
	if !errors.Is(err, simulate.ErrBadInput) {
		t.Fatalf("err = %v, want bad input", err)
	}
	for _, want := range []string{`c.yaml:1 (document 1, NodeClaim "c1")`, "metadata.annotations[dovetail.sh/price-per-hour]", "metadata.annotations[dovetail.sh/offering]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want %q", err, want)
		}
	}
}

// TestRunDisruptionSpotToSpotGate: the gate decides whether a lone,
// oversized spot node is replaced by a cheaper spot node.
func TestRunDisruptionSpotToSpotGate(t *testing.T) {
	const in = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec: {amiSelectorTerms: [{alias: al2023@latest}], role: r, subnetSelectorTerms: [{tags: {a: b}}], securityGroupSelectorTerms: [{tags: {a: b}}]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  disruption: {budgets: [{nodes: "100%"}]}
---
apiVersion: v1
kind: Node
metadata:
  name: big
  labels: {karpenter.sh/nodepool: spot, karpenter.sh/capacity-type: spot, node.kubernetes.io/instance-type: m5.4xlarge, topology.kubernetes.io/zone: us-east-1a, kubernetes.io/arch: amd64, kubernetes.io/os: linux}
status:
  allocatable: {cpu: 15890m, memory: 60Gi, pods: "234"}
---
apiVersion: v1
kind: Pod
metadata: {name: small, namespace: shop, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}]}
spec: {nodeName: big, containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]}
`
	plan := func(gate bool) *simulate.DisruptionResult {
		m := &simulate.Manifests{}
		if err := m.Read("c.yaml", []byte(in)); err != nil {
			t.Fatal(err)
		}
		r, err := simulate.RunDisruption(m, simulate.Options{Region: "us-east-1", SpotToSpotConsolidation: gate}, disruptionNow)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	off := plan(false)
	if len(off.Commands) != 0 || len(off.Kept) != 1 || off.Kept[0].Code != string(disruption.CodeSpotToSpotDisabled) {
		t.Errorf("gate off: commands %+v kept %+v, want big kept with %s", off.Commands, off.Kept, disruption.CodeSpotToSpotDisabled)
	}
	on := plan(true)
	if len(on.Commands) != 1 || len(on.Commands[0].Replacements) != 1 || on.Commands[0].Replacements[0].CapacityType != "spot" ||
		on.Commands[0].SavingsPerHour <= 0 {
		t.Errorf("gate on: commands %+v kept %+v, want big replaced by a cheaper spot node", on.Commands, on.Kept)
	}
}

func TestRenderDisruptionGap(t *testing.T) {
	r := &simulate.DisruptionResult{Now: "2026-12-01T10:00:00Z", FleetPricePerHour: 2, FleetPricePerHourAfter: 1.5, SavingsPerHour: 0.5, LowerBoundPricePerHour: 1.2}
	var b strings.Builder
	if err := simulate.RenderDisruption(&b, r, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "gap after: 25.0%") || !strings.Contains(b.String(), "No disruption commands.") {
		t.Errorf("table:\n%s", b.String())
	}
	r.PendingPods = 3
	b.Reset()
	if err := simulate.RenderDisruption(&b, r, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "gap after: n/a (3 pending pods)") {
		t.Errorf("with pending pods:\n%s", b.String())
	}
	if err := simulate.RenderDisruption(&b, r, "xml"); err == nil {
		t.Error("xml accepted")
	}
}
