package apitest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
)

// The NodeOverlay and CapacityBuffer CRDs dovetail installs beside the
// peer's other three (dovetail does not act on them yet; docs/api.md).
// Their cases join invalidCases and validCases, so TestInvalidObjectsRefused,
// TestValidEdgeCasesAccepted and TestAgreesWithThePeer hold them to the
// peer's CRDs like the rest.

const baseNodeOverlay = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: NAME}
spec:
  weight: 10
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7g, c7g]}
  priceAdjustment: "-10%"
  capacity: {example.com/device: "2"}
`

const baseCapacityBuffer = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: NAME, namespace: default}
spec:
  podTemplateRef: {name: buffer-chunk}
  replicas: 3
`

// overlayReqs writes a merge patch that replaces the overlay's requirements.
func overlayReqs(list string) string { return "spec: {requirements: " + list + "}" }

func manyOverlayRequirements(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("{key: example.com/k%d, operator: Exists}", i)
	}
	return overlayReqs("[" + strings.Join(items, ",") + "]")
}

func overlayBufferInvalidCases() []invalidCase {
	no, cb := baseNodeOverlay, baseCapacityBuffer
	return []invalidCase{
		// NodeOverlay.
		{name: "overlay without requirements", base: no, patch: overlayReqs("null"), field: "spec.requirements", msg: "Required"},
		{name: "overlay price and priceAdjustment", base: no, patch: `spec: {price: "0.5"}`, field: "spec", msg: "price"},
		{name: "overlay negative price", base: no, patch: `spec: {priceAdjustment: null, price: "-1"}`, field: "spec.price", msg: "should match"},
		{name: "overlay price in words", base: no, patch: `spec: {priceAdjustment: null, price: cheap}`, field: "spec.price", msg: "should match"},
		{name: "overlay adjustment without sign", base: no, patch: `spec: {priceAdjustment: "10%"}`, field: "spec.priceAdjustment", msg: "should match"},
		{name: "overlay adjustment below -100%", base: no, patch: `spec: {priceAdjustment: "-150%"}`, field: "spec.priceAdjustment", msg: "should match"},
		{name: "overlay capacity cpu", base: no, patch: `spec: {capacity: {cpu: "2"}}`, field: "spec.capacity", msg: "extended resources"},
		{name: "overlay capacity pods", base: no, patch: `spec: {capacity: {pods: "200"}}`, field: "spec.capacity", msg: "extended resources"},
		{name: "overlay capacity not a quantity", base: no, patch: `spec: {capacity: {example.com/device: lots}}`, field: "spec.capacity"},
		{name: "overlay weight 0", base: no, patch: `spec: {weight: 0}`, field: "spec.weight"},
		{name: "overlay weight 10001", base: no, patch: `spec: {weight: 10001}`, field: "spec.weight"},
		{name: "overlay unknown operator", base: no, patch: overlayReqs(`[{key: a, operator: Near, values: [x]}]`), field: "spec.requirements[0].operator", msg: "Unsupported value"},
		{name: "overlay In without values", base: no, patch: overlayReqs(`[{key: a, operator: In}]`), field: "spec.requirements"},
		{name: "overlay In with empty values", base: no, patch: overlayReqs(`[{key: a, operator: In, values: []}]`), field: "spec.requirements", msg: "operator In"},
		{name: "overlay NotIn with empty values", base: no, patch: overlayReqs(`[{key: a, operator: NotIn, values: []}]`), field: "spec.requirements", msg: "operator NotIn"},
		{name: "overlay Gt with a word", base: no, patch: overlayReqs(`[{key: a, operator: Gt, values: [five]}]`), field: "spec.requirements"},
		{name: "overlay Lte with two values", base: no, patch: overlayReqs(`[{key: a, operator: Lte, values: ["1", "2"]}]`), field: "spec.requirements", msg: "integer"},
		{name: "overlay Gte with a negative integer", base: no, patch: overlayReqs(`[{key: a, operator: Gte, values: ["-3"]}]`), field: "spec.requirements", msg: "non-negative integer"},
		{name: "overlay malformed key", base: no, patch: overlayReqs(`[{key: "bad key!", operator: Exists}]`), field: "spec.requirements[0].key", msg: "should match"},
		{name: "overlay hostname key", base: no, patch: overlayReqs(`[{key: kubernetes.io/hostname, operator: In, values: [n1]}]`), field: "spec.requirements[0].key", msg: "kubernetes.io/hostname"},
		{name: "overlay karpenter.sh key", base: no, patch: overlayReqs(`[{key: karpenter.sh/registered, operator: Exists}]`), field: "spec.requirements[0].key", msg: "karpenter.sh domain"},
		{name: "overlay karpenter.sh subdomain key", base: no, patch: overlayReqs(`[{key: team.karpenter.sh/x, operator: Exists}]`), field: "spec.requirements[0].key", msg: "karpenter.sh domain"},
		{name: "overlay domain ending in karpenter.sh", base: no, patch: overlayReqs(`[{key: notkarpenter.sh/x, operator: Exists}]`), field: "spec.requirements[0].key", msg: "karpenter.sh domain"},
		{name: "overlay unknown karpenter.k8s.aws key", base: no, patch: overlayReqs(`[{key: karpenter.k8s.aws/instance-colour, operator: Exists}]`), field: "spec.requirements[0].key", msg: "well-known"},
		{name: "overlay more than 100 requirements", base: no, patch: manyOverlayRequirements(101), field: "spec.requirements", msg: "100"},
		{name: "overlay requirement without operator", base: no, patch: overlayReqs(`[{key: a}]`), field: "spec.requirements[0].operator", msg: "Required"},
		{name: "overlay without spec", base: no, patch: `spec: null`, field: "spec", msg: "Required"},
		// CapacityBuffer.
		{name: "buffer podTemplateRef without replicas or limits", base: cb, patch: `spec: {replicas: null}`, field: "spec", msg: "replicas or limits"},
		{name: "buffer podTemplateRef and scalableRef", base: cb, patch: `spec: {scalableRef: {kind: Deployment, name: web}}`, field: "spec", msg: "not both"},
		{name: "buffer negative replicas", base: cb, patch: `spec: {replicas: -1}`, field: "spec.replicas"},
		{name: "buffer negative percentage", base: cb, patch: `spec: {podTemplateRef: null, replicas: null, scalableRef: {kind: Deployment, name: web}, percentage: -5}`, field: "spec.percentage"},
		{name: "buffer empty podTemplateRef name", base: cb, patch: `spec: {podTemplateRef: {name: ""}}`, field: "spec.podTemplateRef.name"},
		{name: "buffer scalableRef without kind", base: cb, patch: `spec: {podTemplateRef: null, scalableRef: {name: web}}`, field: "spec.scalableRef.kind", msg: "Required"},
		{name: "buffer scalableRef with empty name", base: cb, patch: `spec: {podTemplateRef: null, scalableRef: {kind: Deployment, name: ""}}`, field: "spec.scalableRef.name"},
		{name: "buffer limits not a quantity", base: cb, patch: `spec: {limits: {cpu: many}}`, field: "spec.limits"},
		{name: "buffer without spec", base: cb, patch: `spec: null`, field: "spec", msg: "Required"},
	}
}

func overlayBufferValidCases() []validCase {
	no, cb := baseNodeOverlay, baseCapacityBuffer
	return []validCase{
		{name: "overlay price", base: no, patch: `spec: {priceAdjustment: null, price: "0.0421"}`},
		{name: "overlay fixed adjustments", base: no, patch: `spec: {priceAdjustment: "+1.25"}`},
		{name: "overlay adjustment -0.5", base: no, patch: `spec: {priceAdjustment: "-0.5"}`},
		{name: "overlay adjustment -100%", base: no, patch: `spec: {priceAdjustment: "-100%"}`},
		{name: "overlay adjustment +250%", base: no, patch: `spec: {priceAdjustment: "+250%"}`},
		{name: "overlay capacity only", base: no, patch: `spec: {priceAdjustment: null, capacity: {smarter-devices/fuse: "1", hugepages-2Mi: 1Gi}}`},
		{name: "overlay weight 10000", base: no, patch: `spec: {weight: 10000}`},
		{name: "overlay no weight", base: no, patch: `spec: {weight: null}`},
		{name: "overlay empty requirements", base: no, patch: overlayReqs(`[]`)},
		{name: "overlay exactly 100 requirements", base: no, patch: manyOverlayRequirements(100)},
		{name: "overlay nodepool and capacity-type keys", base: no, patch: overlayReqs(`[{key: karpenter.sh/nodepool, operator: In, values: [default]}, {key: karpenter.sh/capacity-type, operator: NotIn, values: [spot]}]`)},
		{name: "overlay well-known aws keys", base: no, patch: overlayReqs(`[{key: karpenter.k8s.aws/ec2nodeclass, operator: In, values: [default]}, {key: karpenter.k8s.aws/instance-capability-flex, operator: Exists}, {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}, {key: karpenter.k8s.aws/instance-memory, operator: Lt, values: ["65536"]}]`)},
		{name: "overlay custom and topology keys", base: no, patch: overlayReqs(`[{key: team, operator: In, values: [a]}, {key: topology.kubernetes.io/zone, operator: DoesNotExist}, {key: example.com/karpenter.sh, operator: Exists}]`)},
		{name: "buffer scalableRef with percentage", base: cb, patch: `spec: {podTemplateRef: null, replicas: null, scalableRef: {apiGroup: apps, kind: Deployment, name: web}, percentage: 20}`},
		{name: "buffer podTemplateRef with limits", base: cb, patch: `spec: {replicas: null, limits: {cpu: "8", memory: 16Gi}}`},
		{name: "buffer zero replicas", base: cb, patch: `spec: {replicas: 0}`},
		{name: "buffer other strategy", base: cb, patch: `spec: {provisioningStrategy: example.com/standby}`},
		{name: "buffer scalableRef alone", base: cb, patch: `spec: {podTemplateRef: null, replicas: null, scalableRef: {kind: ReplicaSet, name: web}}`},
	}
}

// The manifests TestOverlayAndBufferApply applies: a NodeOverlay and a
// CapacityBuffer as a peer user writes them (with the PodTemplate the
// buffer names), and an overlay that the CRD's CEL rule refuses.
const (
	overlayManifest = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: graviton-discount}
spec:
  weight: 20
  requirements:
  - {key: kubernetes.io/arch, operator: In, values: [arm64]}
  - {key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["7"]}
  priceAdjustment: "-10%"
  capacity: {example.com/fpga: "1"}
`
	bufferManifest = `
apiVersion: v1
kind: PodTemplate
metadata: {name: buffer-chunk, namespace: default}
template:
  spec:
    containers:
    - {name: pause, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: warm-pool, namespace: default}
spec:
  podTemplateRef: {name: buffer-chunk}
  replicas: 2
`
	invalidOverlayManifest = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: both-prices}
spec:
  requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
  price: "0.1"
  priceAdjustment: "+0.5"
`
)

// TestOverlayAndBufferApply applies a NodeOverlay and a CapacityBuffer with
// kubectl to the real API server, reads them back through the Go types,
// checks what `kubectl get` prints for them (short names, -o wide, the
// default provisioningStrategy), and that an overlay setting both price
// and priceAdjustment is refused by the CEL rule with its message.
func TestOverlayAndBufferApply(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	overlay, buffer := write("overlay.yaml", overlayManifest), write("buffer.yaml", bufferManifest)
	kubectl(t, "apply", "-f", overlay, "-f", buffer)
	t.Cleanup(func() { kubectl(t, "delete", "--wait=false", "-f", overlay, "-f", buffer) })

	c := newClient(t)
	ctx := testContext(t)
	var no karpv1alpha1.NodeOverlay
	if err := c.Get(ctx, client.ObjectKey{Name: "graviton-discount"}, &no); err != nil {
		t.Fatal(err)
	}
	if no.Spec.PriceAdjustment == nil || *no.Spec.PriceAdjustment != "-10%" || no.Spec.Weight == nil || *no.Spec.Weight != 20 ||
		len(no.Spec.Requirements) != 2 || no.Spec.Capacity.Name("example.com/fpga", "").String() != "1" {
		t.Errorf("NodeOverlay read back as %+v", no.Spec)
	}
	var cb autoscalingv1beta1.CapacityBuffer
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "warm-pool"}, &cb); err != nil {
		t.Fatal(err)
	}
	if cb.Spec.ProvisioningStrategy == nil || *cb.Spec.ProvisioningStrategy != autoscalingv1beta1.ActiveCapacityStrategy {
		t.Errorf("provisioningStrategy %v, want the default %s", cb.Spec.ProvisioningStrategy, autoscalingv1beta1.ActiveCapacityStrategy)
	}
	if cb.Spec.PodTemplateRef == nil || cb.Spec.PodTemplateRef.Name != "buffer-chunk" || cb.Spec.Replicas == nil || *cb.Spec.Replicas != 2 {
		t.Errorf("CapacityBuffer read back as %+v", cb.Spec)
	}

	overlays := table(kubectl(t, "get", "overlays", "-o", "wide"))
	if want := []string{"NAME", "READY", "AGE", "WEIGHT"}; !slices.Equal(overlays[0], want) {
		t.Errorf("kubectl get overlays -o wide header %q, want %q", overlays[0], want)
	}
	if row := findRow(overlays[1:], "graviton-discount"); len(row) != 3 || row[2] != "20" {
		t.Errorf("overlay row %q, want name, age, weight 20 (no Ready condition yet)", row)
	}
	buffers := table(kubectl(t, "get", "cb", "-n", "default"))
	if want := []string{"NAME", "STRATEGY", "PODTEMPLATE", "REPLICAS", "CONDITIONSTYPE", "CONDITIONSSTATUS", "CONDITIONSREASON", "AGE"}; !slices.Equal(buffers[0], want) {
		t.Errorf("kubectl get cb header %q, want %q", buffers[0], want)
	}
	if row := findRow(buffers[1:], "warm-pool"); len(row) < 2 || row[1] != autoscalingv1beta1.ActiveCapacityStrategy {
		t.Errorf("buffer row %q, want the strategy second", row)
	}
	if out := kubectl(t, "get", "karpenter", "-o", "name"); !strings.Contains(out, "nodeoverlay.karpenter.sh/graviton-discount") {
		t.Errorf("kubectl get karpenter lacks the overlay: %q", out)
	}

	var stderr strings.Builder
	cmd := cp.Kubectl(ctx, "apply", "-f", write("invalid.yaml", invalidOverlayManifest))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("kubectl apply of an overlay with price and priceAdjustment succeeded")
	}
	if !strings.Contains(stderr.String(), "price and priceAdjustment are mutually exclusive") {
		t.Errorf("refusal does not carry the rule's message: %s", stderr.String())
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "both-prices"}, &karpv1alpha1.NodeOverlay{}); err == nil {
		t.Error("the refused overlay exists")
	}
}
