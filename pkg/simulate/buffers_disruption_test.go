package simulate_test

import (
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// simulate --disruption keeps the buffers' room: an empty node that holds
// a buffer's chunk is kept (CapacityBuffer); without the buffer it goes.
func TestRunDisruptionKeepsBufferRoom(t *testing.T) {
	const in = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec: {amiSelectorTerms: [{alias: al2023@latest}], role: r, subnetSelectorTerms: [{tags: {a: b}}], securityGroupSelectorTerms: [{tags: {a: b}}]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: od}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  disruption: {budgets: [{nodes: "100%"}]}
---
apiVersion: v1
kind: Node
metadata:
  name: empty
  labels: {karpenter.sh/nodepool: od, karpenter.sh/capacity-type: on-demand, node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a, kubernetes.io/arch: amd64, kubernetes.io/os: linux}
status:
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
---
`
	plan := func(docs string) *simulate.DisruptionResult {
		t.Helper()
		m := &simulate.Manifests{}
		if err := m.Read("c.yaml", []byte(in+docs)); err != nil {
			t.Fatal(err)
		}
		r, err := simulate.RunDisruption(m, simulate.Options{Region: "us-east-1"}, disruptionNow)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	without := plan(bufferTemplate)
	if len(without.Commands) != 1 {
		t.Fatalf("without a buffer: commands %+v kept %+v, want the empty node removed", without.Commands, without.Kept)
	}
	with := plan(bufferTemplate + "---\n" + bufferDoc("{podTemplateRef: {name: shape}, replicas: 1}"))
	if len(with.Commands) != 0 || len(with.Kept) != 1 || with.Kept[0].Code != string(disruption.CodeBufferRoom) {
		t.Errorf("with a buffer: commands %+v kept %+v, want the node kept with %s", with.Commands, with.Kept, disruption.CodeBufferRoom)
	}
}
