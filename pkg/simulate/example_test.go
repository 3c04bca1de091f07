package simulate_test

import (
	"fmt"
	"os"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

const exampleManifests = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  role: demo
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`

// ExampleRun simulates three one-CPU pods against a pool of m5.large and
// m5.xlarge on-demand nodes in one zone.
func ExampleRun() {
	m := &simulate.Manifests{}
	if err := m.Read("example.yaml", []byte(exampleManifests)); err != nil {
		fmt.Println(err)
		return
	}
	tick := time.Unix(0, 0)
	res, err := simulate.Run(m, simulate.Options{
		Region: "us-east-1", Zones: []string{"us-east-1a"},
		Now: func() time.Time { tick = tick.Add(time.Millisecond); return tick },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods := 0
	for _, c := range res.NodeClaims {
		pods += len(c.Pods)
	}
	fmt.Printf("%d pods on new nodes, %d unschedulable, solve %.3fs\n", pods, len(res.Unschedulable), res.DurationSeconds)
	_ = simulate.Render(os.Stdout, &simulate.Result{NodeClaims: []simulate.NodeClaim{}, ExistingNodes: []simulate.ExistingNode{}, Unschedulable: []simulate.Unschedulable{}}, simulate.FormatJSON)
	// Output:
	// 3 pods on new nodes, 0 unschedulable, solve 0.001s
	// {
	//   "nodeClaims": [],
	//   "existingNodes": [],
	//   "unschedulable": [],
	//   "totalPricePerHour": 0,
	//   "lowerBoundPricePerHour": 0,
	//   "durationSeconds": 0
	// }
}
