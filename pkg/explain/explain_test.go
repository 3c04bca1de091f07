package explain_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

func itype(name, arch, cpu string, price float64, zones ...string) *cloudprovider.InstanceType {
	it := &cloudprovider.InstanceType{Name: name,
		Labels:   map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: arch, corev1.LabelOSStable: "linux"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")}}
	for _, z := range zones {
		it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true})
	}
	return it
}

// TestPoolCensus: without an API server, the census of one pool counts
// types by the first rule they fail, names the pool's code by the types
// that got furthest, and a daemonset's requests count against each type.
func TestPoolCensus(t *testing.T) {
	types := []*cloudprovider.InstanceType{
		itype("a1.large", "arm64", "2", 0.05, "z1"),
		itype("a1.xlarge", "arm64", "4", 0.10, "z1"),
		itype("m1.large", "amd64", "2", 0.06, "z1"),
		itype("m1.xlarge", "amd64", "4", 0.12, "z2"),
		itype("m1.2xlarge", "amd64", "8", 0.24, "z2"),
	}
	pool := engine.NodePool{Name: "p", InstanceTypes: types,
		Requirements: requirements.NewRequirements(requirements.MustNew(corev1.LabelArchStable, requirements.In, []string{"amd64"}, nil))}
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "d",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelTopologyZone: "z1"},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}
	in := &engine.Input{Pods: []*corev1.Pod{pod}, NodePools: []engine.NodePool{pool}, DaemonSets: []*appsv1.DaemonSet{ds}}
	out, err := explain.ExplainPod(in, []*corev1.Pod{pod}, nil, nil, engine.PodRef{Namespace: "ns", Name: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	p := out.NodePools[0]
	// 2 arm64 types out by the pool's arch; m1.large too small for 3 CPU
	// plus the daemonset's 500m;
	// m1.xlarge and m1.2xlarge fit but are offered only in z2.
	want := map[string]int{"kubernetes.io/arch: not in [amd64]": 2, "too small for cpu (needs 3.5 with daemonsets)": 1, "no offering in zones [z1]": 2}
	got := map[string]int{}
	for _, c := range p.Rejected {
		got[c.Reason] = c.Count
	}
	for r, n := range want {
		if got[r] != n {
			t.Errorf("census %v; want %d x %q", got, n, r)
		}
	}
	if p.Code != string(engine.NoAvailableOffering) || p.Fitting != 0 || !strings.HasPrefix(p.Reason, "5 types: ") {
		t.Errorf("pool = %+v; want NoAvailableOffering decided by the types that got furthest", p)
	}
	if out.Verdict.Schedulable || out.Verdict.Code == "" {
		t.Errorf("verdict %+v; want the engine's reason", out.Verdict)
	}
	if _, err := explain.ExplainPod(in, []*corev1.Pod{pod}, nil, nil, engine.PodRef{Namespace: "ns", Name: "nope"}); err == nil || !strings.Contains(err.Error(), "pod ns/nope not found") {
		t.Errorf("a missing pod: %v", err)
	}
}

// TestNodeClaimUnknownInstanceType is issue 34 item 7: a NodeClaim launched
// on an instance type its pool's catalog does not know, with no recorded
// price, is not called "$0/h, the cheapest offering of its pool"; nor is a
// corrupt recorded price (NaN, negative) taken as its price.
func TestNodeClaimUnknownInstanceType(t *testing.T) {
	pool := engine.NodePool{Name: "p", InstanceTypes: []*cloudprovider.InstanceType{itype("m1.large", "amd64", "2", 0.06, "z1")}}
	in := &engine.Input{NodePools: []engine.NodePool{pool}}
	for _, price := range []string{"", "NaN", "-1", "+Inf"} {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1",
			Labels: map[string]string{karpv1.NodePoolLabelKey: "p", corev1.LabelInstanceTypeStable: "x9.mystery",
				corev1.LabelTopologyZone: "z1", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand}}}
		if price != "" {
			nc.Annotations = map[string]string{karpv1.AnnotationPricePerHour: price}
		}
		out, err := explain.ExplainNodeClaim(in, []*karpv1.NodeClaim{nc}, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if out.Offering == nil || !out.Offering.PriceUnknown || out.Offering.PricePerHour != 0 {
			t.Errorf("price %q: offering %+v, want the price unknown", price, out.Offering)
		}
		if strings.Contains(out.Summary, "cheapest") || !strings.Contains(out.Summary, "unknown") {
			t.Errorf("price %q: summary %q, want the price called unknown, not the cheapest", price, out.Summary)
		}
		var b strings.Builder
		if err := out.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "$0/h") || strings.Contains(b.String(), "$0.0000/h") {
			t.Errorf("price %q: text prices it at $0:\n%s", price, b.String())
		}
	}
}

// TestPoolCensusKeepsMinValues: a pool whose requirements carry minValues
// is not reported as able to take a pod when fewer distinct values than
// that fit, and the pool line agrees with the engine's verdict (issue 25:
// "MinValuesUnsatisfiable" beside "OK, can take it").
func TestPoolCensusKeepsMinValues(t *testing.T) {
	types := []*cloudprovider.InstanceType{
		itype("a1.large", "arm64", "2", 0.05, "z1"),
		itype("a1.xlarge", "arm64", "4", 0.10, "z1"),
		itype("m1.large", "amd64", "2", 0.06, "z1"),
		itype("m1.xlarge", "amd64", "4", 0.12, "z1"),
		itype("m1.2xlarge", "amd64", "8", 0.24, "z1"),
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	for _, tt := range []struct {
		minValues int
		wantCode  string // "" means the pool can take it
	}{{3, string(engine.MinValuesUnsatisfiable)}, {2, ""}} {
		pool := engine.NodePool{Name: "p", InstanceTypes: types, Requirements: requirements.NewRequirements(
			requirements.MustNew(corev1.LabelInstanceTypeStable, requirements.Exists, nil, &tt.minValues))}
		in := &engine.Input{Pods: []*corev1.Pod{pod}, NodePools: []engine.NodePool{pool}}
		out, err := explain.ExplainPod(in, []*corev1.Pod{pod}, nil, nil, engine.PodRef{Namespace: "ns", Name: "p1"})
		if err != nil {
			t.Fatal(err)
		}
		p := out.NodePools[0]
		if p.Code != tt.wantCode {
			t.Errorf("minValues %d: pool %+v, want code %q", tt.minValues, p, tt.wantCode)
		}
		if tt.wantCode != "" && (out.Verdict.Schedulable || out.Verdict.Code != tt.wantCode || !strings.Contains(p.Reason, "minValues is 3")) {
			t.Errorf("minValues %d: verdict %+v and pool %+v disagree", tt.minValues, out.Verdict, p)
		}
		if tt.wantCode == "" && (!out.Verdict.Schedulable || !strings.HasPrefix(p.Reason, "can take it: 2 of 5")) {
			t.Errorf("minValues %d: verdict %+v, pool %+v; want both to take it", tt.minValues, out.Verdict, p)
		}
	}
}
