package simulate_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

func read(t *testing.T, docs ...string) *simulate.Manifests {
	t.Helper()
	m := &simulate.Manifests{}
	if err := m.Read("in.yaml", []byte(strings.Join(docs, "\n---\n"))); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClusterExpandsWorkloads(t *testing.T) {
	m := read(t, nodeClassDoc, poolDoc, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {a: b}}
    spec: {containers: [{name: c}]}`, `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  selector: {matchLabels: {app: rs}}
  template: {metadata: {labels: {app: rs}}, spec: {containers: [{name: c}]}}`, `
apiVersion: batch/v1
kind: Job
metadata: {name: capped}
spec: {parallelism: 5, completions: 2, template: {spec: {containers: [{name: c}], restartPolicy: Never}}}`, `
apiVersion: batch/v1
kind: Job
metadata: {name: wide}
spec: {parallelism: 4, template: {spec: {containers: [{name: c}], restartPolicy: Never}}}`, `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c}]}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {storageClassName: fast, resources: {requests: {storage: 1Gi}}}`, `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-1}
spec: {volumeName: pv-1, resources: {requests: {storage: 1Gi}}}`)
	c, warnings, err := m.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	var names []string
	for _, p := range c.Pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	want := []string{"shop/web-0", "shop/web-1", "shop/web-2", "default/rs-0", "default/db-0", "default/db-1",
		"default/capped-0", "default/capped-1", "default/wide-0", "default/wide-1", "default/wide-2", "default/wide-3"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("pods =\n%v\nwant\n%v", names, want)
	}
	web := c.Pods[0]
	if web.Labels["app"] != "web" || web.Annotations["a"] != "b" || len(web.OwnerReferences) != 1 ||
		web.OwnerReferences[0].Kind != "Deployment" || web.OwnerReferences[0].Name != "web" || web.OwnerReferences[0].APIVersion != "apps/v1" {
		t.Errorf("web-0 metadata = %+v", web.ObjectMeta)
	}
	db1 := c.Pods[5]
	if db1.Labels["statefulset.kubernetes.io/pod-name"] != "db-1" || len(db1.Spec.Volumes) != 1 || db1.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-1" {
		t.Errorf("db-1 = %+v %+v", db1.Labels, db1.Spec.Volumes)
	}
	// data-db-1 was given; data-db-0 is made from the template.
	var claims []string
	for _, pvc := range c.PersistentVolumeClaims {
		claims = append(claims, pvc.Name+"="+pvc.Spec.VolumeName)
	}
	if !reflect.DeepEqual(claims, []string{"data-db-1=pv-1", "data-db-0="}) {
		t.Errorf("claims = %v", claims)
	}
	// The template's spec is copied, not shared.
	c.Pods[0].Spec.Containers[0].Name = "changed"
	if m.Deployments[0].Spec.Template.Spec.Containers[0].Name != "c" {
		t.Error("pod spec shares memory with the template")
	}
}

func TestClusterDaemonSetPodsOnExistingNodes(t *testing.T) {
	m := read(t, `
apiVersion: v1
kind: Node
metadata: {name: plain, labels: {kubernetes.io/os: linux}}`, `
apiVersion: v1
kind: Node
metadata: {name: tainted, labels: {kubernetes.io/os: linux}}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}`, `
apiVersion: v1
kind: Node
metadata: {name: cordoned, labels: {kubernetes.io/os: linux}}
spec: {unschedulable: true, taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]}`, `
apiVersion: v1
kind: Node
metadata: {name: windows, labels: {kubernetes.io/os: windows}}`, `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {nodeSelector: {kubernetes.io/os: linux}, containers: [{name: c}]}`, `
apiVersion: v1
kind: Pod
metadata:
  name: agent-abc
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: "1"}]
spec: {nodeName: cordoned, containers: [{name: c}]}`)
	c, _, err := m.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range c.Pods {
		got[p.Spec.NodeName] = p.Name
	}
	want := map[string]string{"plain": "agent-plain", "cordoned": "agent-abc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("daemon pods by node = %v, want %v (tainted: not tolerated; windows: selector; cordoned: already has one)", got, want)
	}
}

func TestClusterReferenceErrors(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		want []string
	}{
		{name: "missing node class", docs: []string{poolDoc}, want: []string{`NodePool "general"`, `EC2NodeClass "default"`, "nodeClassRef.name"}},
		{name: "pod on a missing node", docs: []string{"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: gone, containers: [{name: c}]}"},
			want: []string{"spec.nodeName", `"gone"`}},
		{name: "generated pod collides", docs: []string{
			"apiVersion: v1\nkind: Pod\nmetadata: {name: web-0}\nspec: {containers: [{name: c}]}",
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}}"},
			want: []string{"document 2", "default/web-0", "collides"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := read(t, tc.docs...).Cluster()
			if !errors.Is(err, simulate.ErrBadInput) {
				t.Fatalf("err = %v, want bad input", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestClusterWarnsAboutMissingClaims(t *testing.T) {
	_, warnings, err := read(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], volumes: [{name: v, persistentVolumeClaim: {claimName: nope}}]}").Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"nope"`) {
		t.Errorf("warnings = %v", warnings)
	}
}

func TestReadCatalog(t *testing.T) {
	good := `{"instanceTypes":[
	  {"name":"a.small","labels":{"kubernetes.io/arch":"arm64"},"capacity":{"cpu":"2","memory":"4Gi","pods":"10","nvidia.com/gpu":"1"},
	   "overhead":{"cpu":"100m","memory":"512Mi"},
	   "offerings":[{"zone":"z1","capacityType":"spot","price":0.01,"available":true},{"zone":"z2","capacityType":"on-demand","price":0.03},
	                {"zone":"z3","capacityType":"spot","price":0.02,"available":false}]}]}`
	types, err := simulate.ReadCatalog("cat.json", []byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	it := types[0]
	if it.Labels[corev1.LabelInstanceTypeStable] != "a.small" || it.Labels["kubernetes.io/arch"] != "arm64" {
		t.Errorf("labels = %v", it.Labels)
	}
	alloc := it.Allocatable()
	if cpu, mem, gpu := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory], alloc["nvidia.com/gpu"]; cpu.MilliValue() != 1900 || mem.Value() != 3584<<20 || gpu.Value() != 1 {
		t.Errorf("allocatable = %v", alloc)
	}
	if len(it.Offerings) != 3 || !it.Offerings[1].Available || it.Offerings[2].Available {
		t.Errorf("offerings = %+v (available defaults to true)", it.Offerings)
	}
	// A zone filter keeps only those zones' offerings.
	types, err = simulate.ReadCatalog("cat.json", []byte(good), []string{"z2"})
	if err != nil || len(types[0].Offerings) != 1 || types[0].Offerings[0].Zone != "z2" {
		t.Errorf("zone filter: %v %+v", err, types)
	}

	bad := []struct{ name, input, want string }{
		{"not json", `{"instanceTypes": [`, "not a valid instance-type catalog"},
		{"unknown field", `{"instanceTypes":[{"name":"a","capacity":{"cpu":"1"},"offerings":[],"colour":"red"}]}`, "colour"},
		{"bad quantity", `{"instanceTypes":[{"name":"a","capacity":{"cpu":"one"},"offerings":[]}]}`, "instanceTypes[0].capacity[cpu]"},
		{"empty", `{"instanceTypes":[]}`, "instanceTypes: Required"},
		{"no name", `{"instanceTypes":[{"capacity":{"cpu":"1"},"offerings":[]}]}`, "instanceTypes[0].name"},
		{"duplicate", `{"instanceTypes":[{"name":"a","capacity":{"cpu":"1"}},{"name":"a","capacity":{"cpu":"1"}}]}`, "instanceTypes[1].name: Duplicate"},
		{"capacity type", `{"instanceTypes":[{"name":"a","capacity":{"cpu":"1"},"offerings":[{"zone":"z","capacityType":"cheap","price":1}]}]}`, "instanceTypes[0].offerings[0].capacityType"},
		{"negative price", `{"instanceTypes":[{"name":"a","capacity":{"cpu":"1"},"offerings":[{"zone":"z","capacityType":"spot","price":-1}]}]}`, "offerings[0].price"},
		{"no zone", `{"instanceTypes":[{"name":"a","capacity":{"cpu":"1"},"offerings":[{"capacityType":"spot","price":1}]}]}`, "offerings[0].zone"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulate.ReadCatalog("cat.json", []byte(tc.input), nil)
			if !errors.Is(err, simulate.ErrBadInput) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "cat.json") {
				t.Errorf("err = %v, want bad input naming cat.json and %q", err, tc.want)
			}
		})
	}
}

// TestRunLocatesEngineInputErrors checks that a pod the engine refuses (a
// node affinity operator Kubernetes does not have) is reported at its
// document, for a listed pod and for a workload's template alike.
func TestRunLocatesEngineInputErrors(t *testing.T) {
	bad := `affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near, values: [b]}]}]}}}`
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{name: "pod", doc: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  " + bad,
			want: []string{`(document 3, Pod "p"): spec`, "Near"}},
		{name: "deployment", doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c}]\n      " + bad,
			want: []string{`(document 3, Deployment "web"): spec.template.spec`, "pod default/web-0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := read(t, nodeClassDoc, poolDoc, tc.doc)
			_, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
			if !errors.Is(err, simulate.ErrBadInput) {
				t.Fatalf("err = %v, want bad input", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// FuzzReadCatalog checks that ReadCatalog never panics, that its errors
// name the file, and that what it accepts is usable: named types with
// non-negative capacity.
func FuzzReadCatalog(f *testing.F) {
	for _, s := range []string{
		`{"instanceTypes":[{"name":"a","capacity":{"cpu":"2","memory":"4Gi"},"offerings":[{"zone":"z","capacityType":"spot","price":0.1}]}]}`,
		`{"instanceTypes":[{"name":"a","capacity":{"cpu":"-1"}}]}`,
		`{"instanceTypes":[{"name":"a","capacity":{"cpu":"1x"}}]}`,
		`instanceTypes: [{name: a, capacity: {cpu: "1"}, offerings: [{zone: z, capacityType: on-demand, price: .NaN}]}]`,
		`{"instanceTypes": null}`, `[]`, `"x"`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		types, err := simulate.ReadCatalog("cat.json", data, nil)
		if err != nil {
			if !errors.Is(err, simulate.ErrBadInput) || !strings.HasPrefix(err.Error(), "cat.json") {
				t.Fatalf("error not located: %v", err)
			}
			return
		}
		for _, it := range types {
			if it.Name == "" {
				t.Fatal("accepted a type without a name")
			}
			for name, q := range it.Capacity {
				if q.Sign() < 0 {
					t.Fatalf("accepted negative capacity %s=%s", name, q.String())
				}
			}
		}
	})
}

// TestRunUsesInFlightNodeClaims checks that capacity already being
// launched is used before new nodes: a pending pod that fits the in-flight
// m5.large lands there, and its nominated pod rides along.
func TestRunUsesInFlightNodeClaims(t *testing.T) {
	m := read(t, nodeClassDoc, poolDoc, `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: general-abc, labels: {karpenter.sh/nodepool: general}}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [general]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
  - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  - {key: kubernetes.io/arch, operator: In, values: [amd64]}`, `
apiVersion: v1
kind: Pod
metadata: {name: nominated}
spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
status: {nominatedNodeName: general-abc}`, `
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}`)
	res, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 0 || len(res.ExistingNodes) != 1 || res.ExistingNodes[0].Name != "general-abc" ||
		len(res.ExistingNodes[0].Pods) != 1 || res.ExistingNodes[0].Pods[0] != "default/pending" {
		t.Errorf("plan = %+v, want default/pending on the in-flight general-abc and no new node", res)
	}
	if res.TotalPricePerHour != 0 {
		t.Errorf("total = %v; an in-flight claim costs nothing new", res.TotalPricePerHour)
	}
}
