package simulate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

const nodeClassDoc = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
  role: r
`

const poolDoc = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
`

func TestReadAcceptsEveryKind(t *testing.T) {
	in := nodeClassDoc + "---\n" + poolDoc + `---
# a comment-only document is skipped
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d, namespace: n1}
  spec:
    selector: {matchLabels: {a: b}}
    template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: rs}
  spec:
    selector: {matchLabels: {a: b}}
    template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec: {template: {spec: {containers: [{name: c}], restartPolicy: Never}}}
---
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: nc}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [general]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc}
spec: {resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec: {capacity: {storage: 1Gi}, hostPath: {path: /x}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc}
provisioner: x
---
apiVersion: v1
kind: Namespace
metadata: {name: n1, labels: {team: a}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec: {maxUnavailable: 1, selector: {matchLabels: {a: b}}}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: o}
spec: {requirements: [{key: kubernetes.io/arch, operator: In, values: [arm64]}], priceAdjustment: "-10%"}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: shape}
template: {spec: {containers: [{name: c, image: i}]}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: b}
spec: {podTemplateRef: {name: shape}, replicas: 2}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec: {replicas: 1, selector: {app: rc}, template: {metadata: {labels: {app: rc}}, spec: {containers: [{name: c, image: i}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: dovetail-commitments, namespace: dovetail}
data: {commitments.yaml: "savingsPlans: [{name: sp, type: Compute, hourlyCommitment: 1}]"}
`
	m := &simulate.Manifests{}
	if err := m.Read("all.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{
		"NodePool": len(m.NodePools), "EC2NodeClass": len(m.NodeClasses), "Pod": len(m.Pods), "Deployment": len(m.Deployments),
		"ReplicaSet": len(m.ReplicaSets), "StatefulSet": len(m.StatefulSets), "DaemonSet": len(m.DaemonSets), "Job": len(m.Jobs),
		"Node": len(m.Nodes), "NodeClaim": len(m.NodeClaims), "PersistentVolumeClaim": len(m.PersistentVolumeClaims),
		"PersistentVolume": len(m.PersistentVolumes), "StorageClass": len(m.StorageClasses), "Namespace": len(m.Namespaces),
		"PodDisruptionBudget": len(m.PodDisruptionBudgets), "NodeOverlay": len(m.NodeOverlays),
		"PodTemplate": len(m.PodTemplates), "CapacityBuffer": len(m.CapacityBuffers), "ConfigMap": len(m.ConfigMaps),
		"Service": len(m.Services), "ReplicationController": len(m.ReplicationControllers),
	}
	for _, k := range simulate.Kinds() {
		if k == "List" {
			continue
		}
		if counts[k] != 1 {
			t.Errorf("%s: read %d objects, want 1", k, counts[k])
		}
	}
	if m.Pods[0].Namespace != "default" || m.Deployments[0].Namespace != "n1" || m.ReplicaSets[0].Namespace != "default" {
		t.Errorf("namespaces: pod %q deployment %q replicaset %q", m.Pods[0].Namespace, m.Deployments[0].Namespace, m.ReplicaSets[0].Namespace)
	}
	// Document numbers count every "---" chunk, the comment-only one too.
	o, ok := m.Origin(simulate.ObjectKey{Kind: "Pod", Namespace: "default", Name: "p"})
	if !ok || o.File != "all.yaml" || o.Document != 4 {
		t.Errorf("pod origin = %+v, want all.yaml document 4", o)
	}
	if o.Line != strings.Count(nodeClassDoc+"---\n"+poolDoc+"---\n# a comment-only document is skipped\n", "\n")+1 {
		t.Errorf("pod document line = %d", o.Line)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		doc   int
		want  []string // substrings of the error
	}{
		{name: "malformed YAML", input: "a: [1, 2\n", doc: 1, want: []string{"not valid YAML"}},
		{name: "not an object", input: "- 1\n- 2\n", doc: 1, want: []string{"must be an object"}},
		{name: "missing kind", input: "apiVersion: v1\nmetadata: {name: x}\n", doc: 1, want: []string{"kind", "Required"}},
		{name: "unknown kind", input: "---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\n", doc: 1, want: []string{"Unsupported value: \"Secret\"", "NodePool", "Pod"}},
		{name: "wrong apiVersion", input: "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: x}\n", doc: 1, want: []string{"apiVersion", "karpenter.sh/v1"}},
		{name: "unknown field", input: poolDoc + "  weigth: 3\n", doc: 1, want: []string{"spec.weigth", "unknown field"}},
		{name: "type mismatch", input: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: many}\n", doc: 1, want: []string{"spec.replicas", `Deployment "d"`}},
		{name: "bad quantity", input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n", doc: 1,
			want: []string{"spec.containers[0].resources.requests[cpu]", `"lots"`, `Pod "p"`}},
		{name: "missing name", input: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c}]}\n", doc: 1, want: []string{"metadata.name", "Required"}},
		{name: "pod without containers", input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", doc: 1, want: []string{"spec.containers"}},
		{name: "second document", input: nodeClassDoc + "---\n" + strings.Replace(poolDoc, "kubernetes.io/arch", "kubernetes.io/hostname", 1), doc: 2,
			want: []string{"spec.template.spec.requirements[0].key", "kubernetes.io/hostname", `NodePool "general"`}},
		{name: "karpenter.sh requirement", input: strings.Replace(poolDoc, "kubernetes.io/arch", "karpenter.sh/nodepool", 1), doc: 1, want: []string{"requirements[0].key", "karpenter.sh domain"}},
		{name: "unknown aws label", input: strings.Replace(poolDoc, "kubernetes.io/arch", "karpenter.k8s.aws/instance-colour", 1), doc: 1, want: []string{"well-known"}},
		{name: "In without values", input: strings.Replace(poolDoc, "values: [amd64]", "values: []", 1), doc: 1, want: []string{"requirements[0]"}},
		{name: "Gt with a word", input: strings.Replace(poolDoc, "{key: kubernetes.io/arch, operator: In, values: [amd64]}", "{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [four]}", 1), doc: 1, want: []string{"requirements[0]"}},
		{name: "weight out of range", input: strings.Replace(poolDoc, "spec:\n  template:", "spec:\n  weight: 500\n  template:", 1), doc: 1, want: []string{"spec.weight", "between 1 and 100"}},
		{name: "hostname template label", input: strings.Replace(poolDoc, "  template:\n", "  template:\n    metadata: {labels: {kubernetes.io/hostname: x}}\n", 1), doc: 1, want: []string{"spec.template.metadata.labels[kubernetes.io/hostname]"}},
		{name: "bad taint effect", input: strings.Replace(poolDoc, "      requirements:", "      taints: [{key: a, effect: Sometimes}]\n      requirements:", 1), doc: 1, want: []string{"spec.template.spec.taints[0].effect"}},
		{name: "wrong class kind", input: strings.Replace(poolDoc, "kind: EC2NodeClass", "kind: AKSNodeClass", 1), doc: 1, want: []string{"nodeClassRef.kind"}},
		{name: "bad kubelet reserved", input: strings.Replace(nodeClassDoc, "  role: r\n", "  role: r\n  kubelet: {kubeReserved: {memory: lots}}\n", 1), doc: 1, want: []string{"spec.kubelet.kubeReserved[memory]"}},
		{name: "bad alias", input: strings.Replace(nodeClassDoc, "al2023@latest", "ubuntu@latest", 1), doc: 1, want: []string{"amiSelectorTerms[0].alias"}},
		{name: "list item", input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: []}\n", doc: 1, want: []string{"items[0].spec.containers"}},
		{name: "duplicate", input: "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n", doc: 2, want: []string{"duplicate", "document 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &simulate.Manifests{}
			err := m.Read("in.yaml", []byte(tc.input))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, simulate.ErrBadInput) {
				t.Errorf("error does not wrap ErrBadInput: %v", err)
			}
			var ie *simulate.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("no *InputError in %v", err)
			}
			if ie.File != "in.yaml" || ie.Document != tc.doc {
				t.Errorf("located at %s document %d, want in.yaml document %d", ie.File, ie.Document, tc.doc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// FuzzRead checks that Read never panics and that every error it returns
// names the file and a document.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"", "---", "a: b", nodeClassDoc, poolDoc, nodeClassDoc + "---\n" + poolDoc,
		"apiVersion: v1\nkind: List\nitems: [1, {kind: Pod}]\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: 1x}}}]}\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}}",
		"--- {apiVersion: v1, kind: Node, metadata: {name: node-1}}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: -1, template: {spec: {containers: [{name: c}]}}}\n",
		"\xff\xfe", "kind: [", "apiVersion: 1\nkind: 2\n", "metadata: {name: {a: b}}\nkind: Pod\napiVersion: v1\n",
		// Duplicate keys, YAML and JSON, at the top and nested.
		"apiVersion: v1\nkind: Pod\nkind: Node\nmetadata: {name: p}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: 1, cpu: 100}}}]}\n",
		`{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"a": "1", "a": "2"}}}`,
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Node, metadata: {name: n, name: m}}]\n",
		// Pod-level resources and ephemeral containers.
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {resources: {requests: {cpu: 1500m, nvidia.com/gpu: 1}, limits: {memory: 1Gi}}, containers: [{name: a, resources: {requests: {cpu: 1}, limits: {memory: 2Gi}}}, {name: b, resources: {requests: {cpu: 1}}}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {os: {name: windows}, resources: {claims: [{name: x}], limits: {hugepages-2Mi: 2Mi}}, containers: [{name: c, resources: {limits: {hugepages-2Mi: 4Mi}}}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], ephemeralContainers: [{name: d, resources: {limits: {cpu: -1}}}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &simulate.Manifests{}
		err := m.Read("fuzz.yaml", data)
		if err == nil {
			return
		}
		var ies simulate.InputErrors
		if !errors.As(err, &ies) || len(ies) == 0 {
			t.Fatalf("error is not InputErrors: %T %v", err, err)
		}
		for _, ie := range ies {
			if ie.File != "fuzz.yaml" || ie.Document < 1 {
				t.Fatalf("error not located: %+v (%v)", ie, ie)
			}
			if !strings.HasPrefix(ie.Error(), "fuzz.yaml:") {
				t.Fatalf("message does not start with the file: %q", ie.Error())
			}
		}
	})
}

// TestReadPeerNodeClaim: a NodeClaim the peer created carries its
// EC2NodeClass as a karpenter.k8s.aws/ec2nodeclass requirement, which the
// peer's CRD (and ours) allows; another unknown key of that domain is
// refused.
func TestReadPeerNodeClaim(t *testing.T) {
	claim := `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: peer-1}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: KEY, operator: In, values: [default]}
`
	m := &simulate.Manifests{}
	if err := m.Read("claim.yaml", []byte(strings.Replace(claim, "KEY", "karpenter.k8s.aws/ec2nodeclass", 1))); err != nil {
		t.Fatalf("the peer's NodeClaim is refused: %v", err)
	}
	err := (&simulate.Manifests{}).Read("claim.yaml", []byte(strings.Replace(claim, "KEY", "karpenter.k8s.aws/instance-colour", 1)))
	if err == nil || !strings.Contains(err.Error(), "well-known") {
		t.Errorf("an unknown karpenter.k8s.aws key: %v, want refused", err)
	}
}
