package simulate_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// The pool and workload of the commitment tests: c6i on spot or
// on-demand, 6 pods of 3 cpu, one per node.
const commitmentPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c6i]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}
      containers: [{name: c, image: i, resources: {requests: {cpu: "3", memory: 2Gi}}}]
`

func commitmentsDoc(body string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: dovetail-commitments, namespace: dovetail}
data:
  commitments.yaml: |
` + body
}

func simulateCommitments(t *testing.T, docs ...string) (*simulate.Result, error) {
	t.Helper()
	m := &simulate.Manifests{}
	if err := m.Read("in.yaml", []byte(strings.Join(append([]string{nodeClassDoc, commitmentPool}, docs...), "---\n"))); err != nil {
		return nil, err
	}
	return simulate.Run(m, simulate.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}})
}

func byCapacity(r *simulate.Result) (covered, spot, od int) {
	for _, nc := range r.NodeClaims {
		switch {
		case nc.Commitment != "":
			covered++
		case nc.CapacityType == "spot":
			spot++
		default:
			od++
		}
	}
	return
}

// simulate reads the ConfigMap dovetail-commitments: without it the plan
// is spot; with a Compute Savings Plan covering the need, covered
// on-demand at about 0; a negative amount is refused naming the field.
func TestSimulateReadsCommitments(t *testing.T) {
	base, err := simulateCommitments(t)
	if err != nil {
		t.Fatal(err)
	}
	if cov, spot, _ := byCapacity(base); cov != 0 || spot != 6 {
		t.Fatalf("without commitments: %d covered, %d spot; want 6 spot", cov, spot)
	}
	r, err := simulateCommitments(t, commitmentsDoc(`    savingsPlans:
    - {name: compute-1y, type: Compute, hourlyCommitment: "20"}
`))
	if err != nil {
		t.Fatal(err)
	}
	cov, spot, od := byCapacity(r)
	if cov != 6 || spot != 0 || od != 0 {
		t.Fatalf("with a $20/h plan: %d covered, %d spot, %d on-demand; want 6 covered", cov, spot, od)
	}
	if r.TotalPricePerHour > 1e-3 || r.NodeClaims[0].Commitment != "compute-1y" || r.NodeClaims[0].CapacityType != "on-demand" {
		t.Errorf("with a $20/h plan: total %g, first claim %+v; want about 0, on-demand, compute-1y", r.TotalPricePerHour, r.NodeClaims[0])
	}

	for _, bad := range []struct{ body, field string }{
		{"    savingsPlans:\n    - {name: sp, type: Compute, hourlyCommitment: \"-5\"}\n", "data[commitments.yaml].savingsPlans[0].hourlyCommitment"},
		{"    savingsPlans:\n    - {name: sp, type: Compute, hourlyCommitment: lots}\n", "data[commitments.yaml].savingsPlans[0].hourlyCommitment"},
		{"    reservedInstances:\n    - {name: ri, instanceType: c6i.xlarge, count: -1}\n", "data[commitments.yaml].reservedInstances[0].count"},
	} {
		_, err := simulateCommitments(t, commitmentsDoc(bad.body))
		if err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("%q: error %v, want one naming %s", bad.body, err, bad.field)
		}
	}
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: dovetail}\ndata: {a: b}\n"
	if _, err := simulateCommitments(t, other); err == nil || !strings.Contains(err.Error(), "dovetail-commitments") {
		t.Errorf("another ConfigMap: error %v, want one saying only dovetail-commitments is read", err)
	}
}

// The example ConfigMap is read and applied: its Compute plan covers the
// whole workload.
func TestSimulateCommitmentsExample(t *testing.T) {
	doc, err := os.ReadFile("../../examples/commitments/commitments.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := simulateCommitments(t, string(doc))
	if err != nil {
		t.Fatalf("the example does not read: %v", err)
	}
	if cov, _, _ := byCapacity(r); cov != 6 {
		t.Errorf("with the example's commitments %d of 6 claims covered, want all", cov)
	}
}
