package overlay_test

import (
	"fmt"
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

// Pools that no overlay tells apart share the adjusted types (one group);
// a pool label an overlay reads splits them, and a pool without that label
// lets the instance type's own label decide. Verdicts count every
// (NodePool, instance type) pair changed.
func TestGroupsOfPools(t *testing.T) {
	c5, m5 := itype("c5.large", "c5", 0.10), itype("m5.large", "m5", 0.20)
	m5.Labels["team"] = "b" // a type label only a pool without "team" sees
	all := []*cloudprovider.InstanceType{c5, m5}
	ps := []overlay.Pool{
		{Name: "a1", NodeClass: "default", Labels: map[string]string{"team": "a"}, Types: all},
		{Name: "a2", NodeClass: "default", Labels: map[string]string{"team": "a"}, Types: all},
		{Name: "b", NodeClass: "default", Labels: map[string]string{"team": "b"}, Types: all},
		{Name: "none", NodeClass: "default", Types: all},
		{Name: "c5-only", NodeClass: "default", Labels: map[string]string{"team": "a"}, Types: all[:1]},
	}
	cheap := no("cheap", 0, in(familyKey, "c5", "m5"))
	cheap.Spec.PriceAdjustment = ptr.To("-50%")
	teamB := no("team-b", 1, in("team", "b"))
	teamB.Spec.Price = ptr.To("0.01")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{cheap, teamB}, ps)
	want := map[string][][]float64{
		"a1":      {{0.05, 0.025}, {0.10, 0.05}},
		"a2":      {{0.05, 0.025}, {0.10, 0.05}},
		"b":       {{0.01, 0.01}, {0.01, 0.01}},
		"none":    {{0.05, 0.025}, {0.01, 0.01}},
		"c5-only": {{0.05, 0.025}},
	}
	for pool, w := range want {
		got := res.Types[pool]
		if len(got) != len(w) {
			t.Fatalf("pool %s: %d types, want %d", pool, len(got), len(w))
		}
		for i := range w {
			if !same(prices(got[i]), w[i]) {
				t.Errorf("pool %s %s: prices %v, want %v", pool, got[i].Name, prices(got[i]), w[i])
			}
		}
	}
	if res.Types["a1"][0] != res.Types["a2"][0] || res.Types["a1"][0] != res.Types["c5-only"][0] {
		t.Errorf("pools no overlay tells apart do not share their adjusted c5.large")
	}
	if &res.Types["a1"][0] != &res.Types["a2"][0] {
		t.Errorf("pools with one input list do not share one output list")
	}
	if res.Types["a1"][0] == res.Types["b"][0] {
		t.Errorf("pools an overlay tells apart share an adjusted type")
	}
	// cheap: c5 and m5 in a1 and a2, c5 in none (its m5 is team-b's) and in c5-only.
	if v, _ := res.Verdict("cheap"); v.Types != 6 {
		t.Errorf("cheap changes %d (pool, type) pairs, want 6", v.Types)
	}
	if v, _ := res.Verdict("team-b"); v.Types != 3 {
		t.Errorf("team-b changes %d (pool, type) pairs, want 3 (b's two, none's m5)", v.Types)
	}
	for _, it := range all {
		if it.Offerings[0].Price != map[string]float64{"c5.large": 0.10, "m5.large": 0.20}[it.Name] {
			t.Errorf("the input %s was modified", it.Name)
		}
	}
}

// An overlay for one NodePool (by karpenter.sh/nodepool) changes that
// pool's types only; the other pools still share one adjusted type.
func TestOverlayForOnePool(t *testing.T) {
	c5, m5 := itype("c5.large", "c5", 0.10), itype("m5.large", "m5", 0.20)
	all := []*cloudprovider.InstanceType{c5, m5}
	ps := []overlay.Pool{{Name: "p1", Types: all}, {Name: "p2", Types: all}, {Name: "p3", Types: all[:1]}}
	onlyP1 := no("only-p1", 2, in("karpenter.sh/nodepool", "p1"))
	onlyP1.Spec.Price = ptr.To("0.5")
	c5Cheap := no("c5-cheap", 1, in(familyKey, "c5"))
	c5Cheap.Spec.PriceAdjustment = ptr.To("-10%")
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{onlyP1, c5Cheap}, ps)
	p1, p2, p3 := res.Types["p1"], res.Types["p2"], res.Types["p3"]
	if !same(prices(p1[0]), []float64{0.5, 0.5}) || !same(prices(p1[1]), []float64{0.5, 0.5}) {
		t.Errorf("p1: %v %v, want every offering at 0.5", prices(p1[0]), prices(p1[1]))
	}
	if !same(prices(p2[0]), []float64{0.09, 0.045}) || p2[1] != m5 || !same(prices(p3[0]), []float64{0.09, 0.045}) {
		t.Errorf("p2: %v, m5 untouched %v; p3: %v", prices(p2[0]), p2[1] == m5, prices(p3[0]))
	}
	if p2[0] != p3[0] || p1[0] == p2[0] {
		t.Errorf("p2 and p3 share their c5.large: %v; p1 has its own: %v", p2[0] == p3[0], p1[0] != p2[0])
	}
	if v, _ := res.Verdict("only-p1"); v.Types != 2 {
		t.Errorf("only-p1 changes %d pairs, want 2", v.Types)
	}
	if v, _ := res.Verdict("c5-cheap"); v.Types != 2 {
		t.Errorf("c5-cheap changes %d pairs, want 2 (p2's and p3's c5.large)", v.Types)
	}
}

// The instance types all overlays adjust together are bounded: an overlay
// that would pass MaxAdjustedTypes is not applied, with a verdict saying
// so, and leaves its pools' types as they were; an overlay that adjusts
// only types already adjusted costs nothing more.
func TestAdjustedTypesBound(t *testing.T) {
	n := overlay.MaxAdjustedTypes*6/10 + 1
	types := make([]*cloudprovider.InstanceType, n)
	for i := range types {
		types[i] = itype(fmt.Sprintf("t%d.large", i), "c5", 0.10)
	}
	ps := []overlay.Pool{{Name: "p1", Types: types}, {Name: "p2", Types: types}}
	forP1 := no("for-p1", 3, in("karpenter.sh/nodepool", "p1"))
	forP1.Spec.PriceAdjustment = ptr.To("-10%")
	forP2 := no("for-p2", 2, in("karpenter.sh/nodepool", "p2"))
	forP2.Spec.PriceAdjustment = ptr.To("-20%")
	again := no("p1-again", 1, in("karpenter.sh/nodepool", "p1"))
	again.Spec.Capacity = corev1.ResourceList{"example.com/dongle": resource.MustParse("1")}
	res := overlay.Apply([]*karpv1alpha1.NodeOverlay{forP1, forP2, again}, ps)
	if v, _ := res.Verdict("for-p1"); !v.Applied() || v.Types != n {
		t.Errorf("for-p1: %+v, want applied to %d types", v, n)
	}
	v, _ := res.Verdict("for-p2")
	if v.Reason != overlay.ReasonTooBroad || !strings.Contains(v.Message, fmt.Sprint(overlay.MaxAdjustedTypes)) {
		t.Errorf("for-p2: %+v, want %s naming the limit", v, overlay.ReasonTooBroad)
	}
	if res.Types["p2"][0] != types[0] {
		t.Errorf("p2's types changed by an overlay that was not applied")
	}
	if v, _ := res.Verdict("p1-again"); !v.Applied() {
		t.Errorf("p1-again adjusts only types already adjusted, yet: %+v", v)
	}
	if got := res.Types["p1"][n-1]; !same(prices(got), []float64{0.09, 0.045}) || got.Capacity.Name("example.com/dongle", resource.DecimalSI).Value() != 1 {
		t.Errorf("p1's last type: prices %v, capacity %v", prices(got), got.Capacity)
	}
}
