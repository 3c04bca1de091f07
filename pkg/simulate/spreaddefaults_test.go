package simulate_test

import (
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

const spreadManifests = exampleManifests + `
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: default}
spec:
  selector: {app: api}
---
apiVersion: v1
kind: Pod
metadata: {name: api-0, namespace: default, labels: {app: api}}
spec:
  containers: [{name: api, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-1, namespace: default, labels: {app: api}}
spec:
  containers: [{name: api, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, namespace: default}
spec:
  replicas: 2
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: legacy, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: lonely-0, namespace: default, labels: {app: lonely}}
spec:
  containers: [{name: lonely, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: lonely-1, namespace: default, labels: {app: lonely}}
spec:
  containers: [{name: lonely, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`

// TestSimulateSchedulerConfig: with --scheduler-config's host and zone
// defaults, the Deployment's three pods, the two pods of the Service and
// the ReplicationController's two each get a node of their own, spread
// over the zones; the two pods nothing selects still share one. Without
// the defaults everything packs.
func TestSimulateSchedulerConfig(t *testing.T) {
	cfg, err := spreaddefaults.Parse([]byte(`podTopologySpread:
  defaultConstraints:
    - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(defaults bool) *simulate.Result {
		m := &simulate.Manifests{}
		if err := m.Read("spread.yaml", []byte(spreadManifests)); err != nil {
			t.Fatal(err)
		}
		opts := simulate.Options{Region: "us-east-1", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}}
		if defaults {
			opts.SpreadDefaults = cfg.Constraints()
		}
		res, err := simulate.Run(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unschedulable) != 0 {
			t.Fatalf("unschedulable: %+v", res.Unschedulable)
		}
		return res
	}
	nodeOf := func(res *simulate.Result) map[string]simulate.NodeClaim {
		out := map[string]simulate.NodeClaim{}
		for _, nc := range res.NodeClaims {
			for _, p := range nc.Pods {
				out[p] = nc
			}
		}
		return out
	}

	with := nodeOf(run(true))
	for _, group := range [][]string{
		{"default/web-0", "default/web-1", "default/web-2"},
		{"default/api-0", "default/api-1"},
		{"default/legacy-0", "default/legacy-1"},
	} {
		nodes, zones := map[string]bool{}, map[string]bool{}
		for _, p := range group {
			nc, ok := with[p]
			if !ok {
				t.Fatalf("%s not on a new NodeClaim: %v", p, with)
			}
			nodes[nc.Name], zones[nc.Zone] = true, true
		}
		if len(nodes) != len(group) || len(zones) != len(group) {
			t.Errorf("with defaults, %v on %d nodes in %d zones, want %d of each", group, len(nodes), len(zones), len(group))
		}
	}
	if with["default/lonely-0"].Name != with["default/lonely-1"].Name {
		t.Errorf("pods nothing selects were spread: %s and %s", with["default/lonely-0"].Name, with["default/lonely-1"].Name)
	}

	without := nodeOf(run(false))
	if without["default/web-0"].Name != without["default/web-1"].Name && without["default/web-1"].Name != without["default/web-2"].Name &&
		without["default/web-0"].Name != without["default/web-2"].Name {
		t.Errorf("without defaults the web pods are still on three nodes: %v", without)
	}
}
