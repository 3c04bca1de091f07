package explain_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

const keptClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec: {amiSelectorTerms: [{alias: al2023@latest}], role: r, subnetSelectorTerms: [{tags: {a: b}}], securityGroupSelectorTerms: [{tags: {a: b}}]}
---
`

// keptPool is NodePool od; replicas "" makes it dynamic.
func keptPool(replicas string) string {
	doc := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: od}
spec:
`
	if replicas != "" {
		doc += "  replicas: " + replicas + "\n"
	}
	return doc + `  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  disruption: {budgets: [{nodes: "100%"}]}
---
`
}

func keptNode(name string) string {
	return `apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {karpenter.sh/nodepool: od, karpenter.sh/capacity-type: on-demand, node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a, kubernetes.io/arch: amd64, kubernetes.io/os: linux}
status:
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
---
`
}

const keptBuffer = `apiVersion: v1
kind: PodTemplate
metadata: {name: shape}
template:
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: "2", memory: 4Gi}}}]
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: b}
spec: {podTemplateRef: {name: shape}, replicas: 1}
---
`

func explainKept(t *testing.T, node, docs string) *explain.NodeResult {
	t.Helper()
	m := &simulate.Manifests{}
	if err := m.Read("c.yaml", []byte(keptClass+docs)); err != nil {
		t.Fatal(err)
	}
	in, _, err := simulate.DisruptionInput(m, simulate.Options{Region: "us-east-1"}, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	r, err := explain.ExplainNode(in, node)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// explain node says an empty node is kept because its pool is static
// (with spec.replicas and how many nodes it has), or because it holds a
// CapacityBuffer's room; the same node in a dynamic pool without a buffer
// is removed as Empty.
func TestExplainNodeKeptForStaticPoolOrBuffer(t *testing.T) {
	if r := explainKept(t, "n1", keptPool("")+keptNode("n1")); r.Decision != "Empty" {
		t.Fatalf("dynamic pool, no buffer: decision %q (%s %s), want Empty", r.Decision, r.Code, r.Reason)
	}
	r := explainKept(t, "n1", keptPool("3")+keptNode("n1")+keptNode("n2"))
	if r.Decision != "kept" || r.Code != "StaticPool" || !strings.Contains(r.Reason, "pool od is static (spec.replicas 3, has 2 nodes)") {
		t.Errorf("static pool: decision %q code %q reason %q", r.Decision, r.Code, r.Reason)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Kept: StaticPool") || !strings.Contains(text.String(), "spec.replicas 3, has 2 nodes") {
		t.Errorf("text:\n%s", text.String())
	}
	r = explainKept(t, "n1", keptPool("")+keptNode("n1")+keptBuffer)
	if r.Decision != "kept" || r.Code != "CapacityBuffer" || !strings.Contains(r.Reason, "CapacityBuffer default/b") {
		t.Errorf("buffer: decision %q code %q reason %q", r.Decision, r.Code, r.Reason)
	}
}
