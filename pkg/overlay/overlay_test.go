package overlay_test

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
)

const familyKey = "karpenter.k8s.aws/instance-family"

func itype(name, family string, od float64) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:     name,
		Labels:   map[string]string{corev1.LabelInstanceTypeStable: name, familyKey: family},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Offerings: cloudprovider.Offerings{
			{Zone: "z-a", ZoneID: "id-a", CapacityType: "on-demand", Price: od, Available: true},
			{Zone: "z-a", ZoneID: "id-a", CapacityType: "spot", Price: od / 2, Available: true},
		},
	}
}

func pools() []overlay.Pool {
	return []overlay.Pool{{Name: "general", NodeClass: "default", Labels: map[string]string{"team": "a"},
		Types: []*cloudprovider.InstanceType{itype("c5.large", "c5", 0.10), itype("m5.large", "m5", 0.20)}}}
}

func no(name string, weight int32, reqs ...karpv1alpha1.NodeSelectorRequirement) *karpv1alpha1.NodeOverlay {
	o := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: karpv1alpha1.NodeOverlaySpec{Requirements: reqs}}
	if weight != 0 {
		o.Spec.Weight = ptr.To(weight)
	}
	return o
}

func in(key string, values ...string) karpv1alpha1.NodeSelectorRequirement {
	return karpv1alpha1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func prices(it *cloudprovider.InstanceType) []float64 {
	var out []float64
	for _, o := range it.Offerings {
		out = append(out, math.Round(o.Price*1e6)/1e6)
	}
	return out
}

func same(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A percentage on one family changes only that family's offerings, names
// the overlay on them, and leaves the input as it was.
func TestPercentageOnOneFamily(t *testing.T) {
	ps := pools()
	o := no("c5-discount", 0, in(familyKey, "c5"))
	o.Spec.PriceAdjustment = ptr.To("-90%")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{o}, ps)
	got := res.Types["general"]
	if !same(prices(got[0]), []float64{0.01, 0.005}) || got[0].Offerings[0].PriceOverlay != "c5-discount" {
		t.Fatalf("c5.large after -90%%: %v by %q", prices(got[0]), got[0].Offerings[0].PriceOverlay)
	}
	if l := got[0].Offerings[0].ListPrice; l != 0.10 {
		t.Errorf("c5.large's list price %v, want the cloud's 0.10 kept beside the overlaid one", l)
	}
	if got[1] != ps[0].Types[1] {
		t.Errorf("m5.large was replaced though the overlay does not match it")
	}
	if !same(prices(ps[0].Types[0]), []float64{0.10, 0.05}) || ps[0].Types[0].Offerings[0].PriceOverlay != "" {
		t.Errorf("the input was modified: %v", prices(ps[0].Types[0]))
	}
	if v, _ := res.Verdict("c5-discount"); !v.Applied() || v.Types != 1 {
		t.Errorf("verdict %+v, want applied to 1 type", v)
	}
}

// Requirements that match nothing change nothing: the pool keeps its slice.
func TestNoMatchChangesNothing(t *testing.T) {
	ps := pools()
	o := no("nothing", 0, in(familyKey, "r5"))
	o.Spec.PriceAdjustment = ptr.To("-90%")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{o}, ps)
	if &res.Types["general"][0] != &ps[0].Types[0] {
		t.Errorf("the pool's types were copied though no overlay matched")
	}
	if v, _ := res.Verdict("nothing"); !v.Applied() || v.Types != 0 {
		t.Errorf("verdict %+v", v)
	}
}

// Offering labels (capacity type, zone), the pool's name and template labels
// and the node class are matched; an absolute price and an amount work.
func TestOfferingAndPoolLabels(t *testing.T) {
	spot := no("spot", 0, in("karpenter.sh/capacity-type", "spot"), in("team", "a"), in("karpenter.k8s.aws/ec2nodeclass", "default"), in("topology.k8s.aws/zone-id", "id-a"))
	spot.Spec.Price = ptr.To("0.001")
	od := no("od", 0, in("karpenter.sh/capacity-type", "on-demand"), in("karpenter.sh/nodepool", "general"))
	od.Spec.PriceAdjustment = ptr.To("+0.05")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{spot, od}, pools())
	got := res.Types["general"]
	if !same(prices(got[0]), []float64{0.15, 0.001}) || !same(prices(got[1]), []float64{0.25, 0.001}) {
		t.Fatalf("prices %v %v", prices(got[0]), prices(got[1]))
	}
	other := no("other-team", 0, in("team", "b"))
	other.Spec.Price = ptr.To("0")
	if res := overlay.Apply([]*karpv1alpha1.NodeOverlay{other}, pools()); !same(prices(res.Types["general"][0]), []float64{0.10, 0.05}) {
		t.Errorf("an overlay for another team's label changed prices")
	}
}

// The higher weight wins an offering; a lower one does not stack on it.
func TestWeightOrder(t *testing.T) {
	hi := no("hi", 10, in(familyKey, "c5"))
	hi.Spec.Price = ptr.To("1")
	lo := no("lo", 1, in(familyKey, "c5", "m5"))
	lo.Spec.PriceAdjustment = ptr.To("-50%")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{lo, hi}, pools())
	got := res.Types["general"]
	if !same(prices(got[0]), []float64{1, 1}) || !same(prices(got[1]), []float64{0.1, 0.05}) {
		t.Fatalf("prices %v %v", prices(got[0]), prices(got[1]))
	}
	for _, v := range res.Verdicts {
		if !v.Applied() {
			t.Errorf("%s not applied: %s", v.Name, v.Message)
		}
	}
}

// Equal weights on the same offering conflict: the name taken second (the
// earlier in the alphabet) is not applied at all and says with whom.
func TestConflictOfEqualWeights(t *testing.T) {
	a := no("a", 5, in(familyKey, "c5", "m5"))
	a.Spec.PriceAdjustment = ptr.To("-50%")
	b := no("b", 5, in(familyKey, "c5"))
	b.Spec.Price = ptr.To("1")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{a, b}, pools())
	va, _ := res.Verdict("a")
	if va.Reason != overlay.ReasonConflict || !strings.Contains(va.Message, `"b"`) || !strings.Contains(va.Message, "spec.priceAdjustment") {
		t.Fatalf("verdict of a: %+v", va)
	}
	got := res.Types["general"]
	if !same(prices(got[0]), []float64{1, 1}) || !same(prices(got[1]), []float64{0.2, 0.1}) {
		t.Fatalf("a was partly applied: %v %v", prices(got[0]), prices(got[1]))
	}
}

// Capacity adds an extended resource; equal weights setting it conflict.
func TestCapacity(t *testing.T) {
	a := no("hugepages", 0, in(familyKey, "m5"))
	a.Spec.Capacity = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")}
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{a}, pools())
	got := res.Types["general"][1]
	if q := got.Capacity["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 || got.CapacityOverlays[0] != "hugepages" {
		t.Fatalf("capacity %v by %v", got.Capacity, got.CapacityOverlays)
	}
	if _, ok := pools()[0].Types[1].Capacity["hugepages-2Mi"]; ok {
		t.Fatal("input modified")
	}
	b := a.DeepCopy()
	b.Name = "more-hugepages"
	res = overlay.Apply([]*karpv1alpha1.NodeOverlay{a, b}, pools())
	if v, _ := res.Verdict("hugepages"); v.Reason != overlay.ReasonConflict {
		t.Errorf("verdict %+v, want Conflict", v)
	}
	cpu := no("cpu", 0)
	cpu.Spec.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	if v, _ := overlay.Apply([]*karpv1alpha1.NodeOverlay{cpu}, pools()).Verdict("cpu"); v.Reason != overlay.ReasonInvalid || !strings.Contains(v.Message, "spec.capacity[cpu]") {
		t.Errorf("verdict %+v", v)
	}
}

// A price that would go negative for a matched offering, or an adjustment
// that does not parse, leaves the overlay out whole, naming the field.
func TestBadOverlaysLeaveTypesAlone(t *testing.T) {
	neg := no("neg", 0, in(familyKey, "c5", "m5"))
	neg.Spec.PriceAdjustment = ptr.To("-0.15") // fine for m5 on-demand, not for c5
	huge := no("huge", 0)
	huge.Spec.PriceAdjustment = ptr.To("+" + strings.Repeat("9", 400))
	letters := no("letters", 0)
	letters.Spec.PriceAdjustment = ptr.To("-ten%")
	price := no("price", 0)
	price.Spec.Price = ptr.To("1e3")
	ps := pools()
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{neg, huge, letters, price}, ps)
	if &res.Types["general"][0] != &ps[0].Types[0] {
		t.Errorf("a bad overlay changed instance types")
	}
	want := map[string]string{"neg": overlay.ReasonNegativePrice, "huge": overlay.ReasonInvalid, "letters": overlay.ReasonInvalid, "price": overlay.ReasonInvalid}
	field := map[string]string{"neg": "spec.priceAdjustment", "huge": "spec.priceAdjustment", "letters": "spec.priceAdjustment", "price": "spec.price"}
	for _, v := range res.Verdicts {
		if v.Reason != want[v.Name] || !strings.Contains(v.Message, field[v.Name]) {
			t.Errorf("verdict %+v, want %s naming %s", v, want[v.Name], field[v.Name])
		}
	}
	if len(overlay.Validate(huge)) == 0 || len(overlay.Validate(neg)) != 0 {
		t.Errorf("Validate: huge %v, neg %v", overlay.Validate(huge), overlay.Validate(neg))
	}
}

// -100% is allowed and gives 0; NotIn and DoesNotExist match a type
// without the label.
func TestEdges(t *testing.T) {
	free := no("free", 0, karpv1alpha1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpDoesNotExist},
		karpv1alpha1.NodeSelectorRequirement{Key: familyKey, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"m5"}})
	free.Spec.PriceAdjustment = ptr.To("-100%")
	got := overlay.Apply([]*karpv1alpha1.NodeOverlay{free}, pools()).Types["general"]
	if !same(prices(got[0]), []float64{0, 0}) || !same(prices(got[1]), []float64{0.2, 0.1}) {
		t.Errorf("prices %v %v", prices(got[0]), prices(got[1]))
	}
}
