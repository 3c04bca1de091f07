package explain_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
)

// overlaidInput: m1.xlarge lists at $0.20/h, c1.xlarge at $0.17/h; the
// NodeOverlay "m1-discount" sets m1.xlarge to $0.10/h, so the engine picks
// it, and explain must say so, name the overlay and the list price.
func overlaidInput(t *testing.T) (*engine.Input, *corev1.Pod) {
	t.Helper()
	types := []*cloudprovider.InstanceType{
		itype("c1.xlarge", "amd64", "4", 0.17, "z1"),
		itype("m1.xlarge", "amd64", "4", 0.20, "z1"),
	}
	no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m1-discount"},
		Spec: karpv1alpha1.NodeOverlaySpec{Price: ptr.To("0.10"),
			Requirements: []karpv1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m1.xlarge"}}}}}
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{no}, []overlay.Pool{{Name: "p", Types: types}})
	if v, _ := res.Verdict("m1-discount"); !v.Applied() {
		t.Fatalf("overlay not applied: %+v", v)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}
	return &engine.Input{Pods: []*corev1.Pod{pod}, NodePools: []engine.NodePool{{Name: "p", InstanceTypes: res.Types["p"]}}}, pod
}

// TestPodNamesTheOverlay: the verdict and the pool line name the overlay
// that made m1.xlarge the choice, with its list price, and agree with the
// engine on the type.
func TestPodNamesTheOverlay(t *testing.T) {
	in, pod := overlaidInput(t)
	out, err := explain.ExplainPod(in, []*corev1.Pod{pod}, nil, nil, engine.PodRef{Namespace: "ns", Name: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	v := out.Verdict
	if !v.Schedulable || v.InstanceType != "m1.xlarge" || v.PricePerHour != 0.10 {
		t.Fatalf("verdict %+v; want m1.xlarge at the overlaid $0.10/h", v)
	}
	if v.Overlays == nil || v.Overlays.Price != "m1-discount" || v.Overlays.ListPricePerHour != 0.20 {
		t.Fatalf("verdict overlays %+v; want m1-discount, list 0.20", v.Overlays)
	}
	p := out.NodePools[0]
	if !strings.Contains(p.Reason, "cheapest m1.xlarge at $0.1/h") || !strings.Contains(p.Reason, "NodeOverlay m1-discount (list $0.2/h)") {
		t.Errorf("pool line %q; want the engine's m1.xlarge with the overlay and list price", p.Reason)
	}
	var b bytes.Buffer
	if err := out.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "price set by NodeOverlay m1-discount (list $0.2/h)") {
		t.Errorf("text does not name the overlay:\n%s", b.String())
	}
}

// TestNodeClaimNamesTheOverlay: a NodeClaim launched on m1.xlarge at the
// cloud's $0.20/h is held against the overlaid $0.10/h the engine chose it
// at, so c1.xlarge ($0.17/h) is not listed as a cheaper offering not
// taken; the overlay and both prices are shown.
func TestNodeClaimNamesTheOverlay(t *testing.T) {
	in, _ := overlaidInput(t)
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "p-1", Labels: map[string]string{karpv1.NodePoolLabelKey: "p"},
		Annotations: map[string]string{karpv1.AnnotationOffering: "m1.xlarge/z1/on-demand", karpv1.AnnotationPricePerHour: "0.2"}}}
	out, err := explain.ExplainNodeClaim(in, []*karpv1.NodeClaim{nc}, "p-1")
	if err != nil {
		t.Fatal(err)
	}
	o := out.Offering
	if o == nil || o.PricePerHour != 0.2 || o.OverlaidPricePerHour != 0.10 || o.Overlays == nil || o.Overlays.Price != "m1-discount" {
		t.Fatalf("offering %+v; want recorded 0.2, overlaid 0.10 by m1-discount", o)
	}
	if out.CheaperTotal != 0 {
		t.Errorf("cheaper %+v; want none below the overlaid price", out.Cheaper)
	}
	var b bytes.Buffer
	if err := out.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodeOverlay m1-discount prices it at $0.1/h for decisions (list $0.2/h)", "at $0.1/h after NodeOverlay m1-discount is the cheapest"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
