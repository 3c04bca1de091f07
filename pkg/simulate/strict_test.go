package simulate_test

import (
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestReadRefusesWhatTheAPIServerRefuses is issue 34 item 4: what the API
// server refuses in any object's metadata, and a duplicate key (which a
// lenient YAML reader resolves last-wins), are input errors naming the
// field.
func TestReadRefusesWhatTheAPIServerRefuses(t *testing.T) {
	pod := func(meta, requests string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: " + meta + "\nspec: {containers: [{name: c, resources: {requests: " + requests + "}}]}\n"
	}
	podLevel := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: " + spec + "\n"
	}
	cases := []struct{ name, in, want string }{
		{"duplicate key", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 1\n        cpu: 100\n", `"cpu" already set in map`},
		{"NUL in name", pod(`{name: "p\u0000"}`, "{}"), "metadata.name: Invalid value"},
		{"ESC in name", pod(`{name: "p\u001b[2J"}`, "{}"), "metadata.name: Invalid value"},
		{"100,000-character name", pod("{name: "+strings.Repeat("a", 100000)+"}", "{}"), "metadata.name: Invalid value"},
		{"1 MiB annotation", pod("{name: p, annotations: {a: "+strings.Repeat("x", 1<<20)+"}}", "{}"), "metadata.annotations: Too long"},
		{"ESC in a label key", pod(`{name: p, labels: {"a\u001bb": v}}`, "{}"), "metadata.labels: Invalid value"},
		{"uppercase name", pod("{name: Web}", "{}"), "metadata.name: Invalid value"},
		{"node name", "apiVersion: v1\nkind: Node\nmetadata: {name: \"n\\r\\nx\"}\n", "metadata.name: Invalid value"},
		{"duplicate key in JSON", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "cpu": "100"}}}]}}`, `"cpu" already set in map`},
		{"duplicate key, one document of several", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, name: b}\n", `"name" already set in map`},
		{"fractional extended resource", pod("{name: p}", `{nvidia.com/gpu: "0.5"}`), "spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value"},
		{"fractional extended resource limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {example.com/foo: 500m}}}]}\n", "spec.containers[0].resources.limits[example.com/foo]: Invalid value"},
		{"extended resource request without a limit", pod("{name: p}", `{nvidia.com/gpu: 1}`), "spec.containers[0].resources.limits[nvidia.com/gpu]: Required value"},
		{"extended resource request differs from its limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}}]}\n", "spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value"},
		{"cpu limit below its request", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]}\n", "spec.containers[0].resources.requests[cpu]: Invalid value"},
		{"pods as a request", pod("{name: p}", "{pods: 1e15}"), "spec.containers[0].resources.requests[pods]: Invalid value"},
		{"negative request", pod("{name: p}", "{memory: -1Gi}"), "spec.containers[0].resources.requests[memory]: Invalid value"},
		{"unqualified resource name", pod("{name: p}", "{gpu: 1}"), "spec.containers[0].resources.requests[gpu]: Invalid value"},
		{"fractional hugepages", pod("{name: p}", "{hugepages-2Mi: 1.5, memory: 1Gi}"), "spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value"},
		{"init container limit below its request", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {initContainers: [{name: i, resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}}], containers: [{name: c}]}\n", "spec.initContainers[0].resources.requests[memory]: Invalid value"},
		{"deployment template", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 0.5}, limits: {nvidia.com/gpu: 0.5}}}]}}}\n", "spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value"},
		{"pod overhead", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {overhead: {cpu: -1}, containers: [{name: c}]}\n", "spec.overhead[cpu]: Invalid value"},
		{"NodeClaim with negative capacity", "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: nc}\nspec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [general]}]\nstatus: {capacity: {cpu: -4}, allocatable: {memory: -1Gi}}\n", "status.capacity[cpu]: Invalid value"},
		{"NodeClaim with negative allocatable", "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: nc}\nspec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [general]}]\nstatus: {allocatable: {memory: -1Gi}}\n", "status.allocatable[memory]: Invalid value"},
		{"1 MiB resource name", pod("{name: p}", "{? "+strings.Repeat("r", 1<<20)+" : 1}"), "spec.containers[0].resources.requests: Invalid value"},
		{"ESC in a resource name", pod("{name: p}", `{"a.io/g\u001bpu": 1}`), "spec.containers[0].resources.requests: Invalid value"},
		{"Node with a fractional GPU", "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {capacity: {nvidia.com/gpu: 500m}}\n", "status.capacity[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer"},
		// Pod-level resources (validatePodResources) and ephemeral containers.
		{"pod-level extended resource", podLevel("{resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}, containers: [{name: c}]}"), "spec.resources.requests[nvidia.com/gpu]: Unsupported value"},
		{"pod-level ephemeral-storage", podLevel("{resources: {requests: {ephemeral-storage: 1Gi}}, containers: [{name: c}]}"), "spec.resources.requests[ephemeral-storage]: Unsupported value"},
		{"pod-level request below the containers' sum", podLevel("{resources: {requests: {cpu: 1500m}}, containers: [{name: a, resources: {requests: {cpu: 1}}}, {name: b, resources: {requests: {cpu: 1}}}]}"), `spec.resources.requests[cpu]: Invalid value: "1500m": must be greater than or equal to aggregate container requests of 2`},
		{"container limit above the pod-level limit", podLevel("{resources: {limits: {memory: 1Gi}}, containers: [{name: c, resources: {limits: {memory: 2Gi}}}]}"), `spec.containers[0].resources.limits[memory]: Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi`},
		{"pod-level hugepages limit below the containers'", podLevel("{resources: {limits: {hugepages-2Mi: 2Mi, memory: 1Gi}}, containers: [{name: a, resources: {limits: {hugepages-2Mi: 2Mi, memory: 512Mi}}}, {name: b, resources: {limits: {hugepages-2Mi: 2Mi, memory: 512Mi}}}]}"), `spec.resources.limits[hugepages-2Mi]: Invalid value: "2Mi": must be greater than or equal to aggregate container limits of 4Mi`},
		{"pod-level claims", podLevel("{resourceClaims: [{name: gpu, resourceClaimName: gpu}], resources: {claims: [{name: gpu}]}, containers: [{name: c}]}"), "spec.resources.claims: Forbidden"},
		{"pod-level resources of a windows pod", podLevel("{os: {name: windows}, resources: {requests: {cpu: 1}}, containers: [{name: c}]}"), "spec.resources: Forbidden: may not be set for a windows pod"},
		{"ephemeral container resources", podLevel("{containers: [{name: c}], ephemeralContainers: [{name: debug, image: busybox, resources: {requests: {cpu: 1}}}]}"), "spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container"},
		{"nodepool label value", strings.Replace(poolDoc, "metadata: {name: general}", "metadata: {name: general, labels: {team: \""+strings.Repeat("v", 64)+"\"}}", 1), "metadata.labels: Invalid value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m simulate.Manifests
			err := m.Read("in.yaml", []byte(nodeClassDoc+"---\n"+c.in))
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %.600q, want it to contain %q", err.Error(), c.want)
			}
			if len(err.Error()) > 4096 {
				t.Fatalf("error is %d bytes: it echoes too much of the input", len(err.Error()))
			}
		})
	}
}

// TestReadAcceptsValidResources: what the API server accepts in a pod's
// resources is accepted (the checks above refuse no more than it does),
// pod-level resources and an ephemeral container without any included.
func TestReadAcceptsValidResources(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  overhead: {cpu: 250m, memory: 120Mi}
  initContainers:
  - {name: i, resources: {requests: {cpu: 100m}}}
  containers:
  - name: c
    resources:
      requests: {cpu: 500m, memory: 1Gi, ephemeral-storage: 1Gi, nvidia.com/gpu: 2, hugepages-2Mi: 4Mi, kubernetes.io/foo: 0.5}
      limits: {cpu: 1, memory: 1Gi, nvidia.com/gpu: "2", hugepages-2Mi: 4Mi}
  - {name: d, resources: {limits: {example.com/dongle: 1, cpu: 2}}}
---
apiVersion: v1
kind: Pod
metadata: {name: pod-level}
spec:
  resources:
    requests: {cpu: 2, memory: 2Gi, hugepages-2Mi: 4Mi}
    limits: {cpu: 4, memory: 4Gi, hugepages-2Mi: 4Mi}
  containers:
  - {name: a, resources: {requests: {cpu: 1, memory: 1Gi, hugepages-2Mi: 2Mi}, limits: {cpu: 4, memory: 1Gi, hugepages-2Mi: 2Mi}}}
  - {name: b, resources: {requests: {cpu: 1, ephemeral-storage: 1Gi}, limits: {nvidia.com/gpu: 1}}}
  - {name: c}
  ephemeralContainers:
  - {name: debug, image: busybox, resources: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: limits-only}
spec:
  resources: {limits: {cpu: 2, memory: 1Gi}}
  containers:
  - {name: a, resources: {limits: {cpu: 2}}}
  - {name: b, resources: {requests: {memory: 512Mi}}}
`
	var m simulate.Manifests
	if err := m.Read("in.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
}
