package instancetype_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instancetype"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

func ptr[T any](v T) *T { return &v }

func archReq(arch string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
}

// resolvedClass is a node class whose status names three zones of the
// region and images of both architectures.
func resolvedClass(zones []catalog.Zone) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	for i, z := range zones {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: "subnet-" + string(rune('a'+i)), Zone: z.Name, ZoneID: z.ID})
	}
	nc.Status.AMIs = []awsv1.AMI{{ID: "ami-1", Requirements: archReq("amd64")}, {ID: "ami-2", Requirements: archReq("arm64")}}
	return nc
}

func newProvider(t *testing.T, withPricing bool) (*awsemu.Emulator, *instancetype.Provider, *clocktesting.FakeClock) {
	e, _ := awstest.Start(t, awsemu.Options{Seed: 3})
	c := awstest.Clients(e)
	clk := clocktesting.NewFakeClock(time.Now())
	o := instancetype.Options{EC2: c.EC2, Region: e.Options().Region, Clock: clk}
	if withPricing {
		o.Pricing = c.Pricing
	}
	return e, instancetype.New(o), clk
}

// TestMatchesCatalog checks, type by type, that what the provider builds
// from EC2's answers equals what the engine computes from the built-in
// catalog for the same zones: the emulator serves the catalog, so any
// difference is a conversion bug.
func TestMatchesCatalog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pricing bool
	}{{"pricing API", true}, {"built-in price fallback", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e, p, _ := newProvider(t, tc.pricing)
			cat := catalog.Builtin()
			region := e.Options().Region
			zones := cat.DefaultZones(region)
			nc := resolvedClass(zones)
			got, err := p.List(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			var zoneNames []string
			for _, z := range zones {
				zoneNames = append(zoneNames, z.Name)
			}
			want := cat.InstanceTypes(region, zoneNames, catalog.KubeletSettings{AMIFamily: awsv1.AMIFamilyAL2023})
			byName := map[string]*cloudprovider.InstanceType{}
			for _, it := range got {
				byName[it.Name] = it
			}
			if len(got) != len(want) {
				t.Errorf("provider lists %d types, catalog %d", len(got), len(want))
			}
			mismatches := 0
			kinds := map[string]int{}
			for _, w := range want {
				g := byName[w.Name]
				if g == nil {
					t.Errorf("%s missing", w.Name)
					continue
				}
				var diffs []string
				if !reflect.DeepEqual(g.Labels, w.Labels) {
					for k, v := range w.Labels {
						if g.Labels[k] != v {
							diffs = append(diffs, "label "+k)
						}
					}
					for k := range g.Labels {
						if _, ok := w.Labels[k]; !ok {
							diffs = append(diffs, "extra label "+k)
						}
					}
				}
				if !equalResources(g.Capacity, w.Capacity) {
					diffs = append(diffs, "capacity")
				}
				if !equalResources(g.Allocatable(), w.Allocatable()) {
					diffs = append(diffs, "allocatable")
				}
				if !equalOfferings(g.Offerings, w.Offerings) {
					diffs = append(diffs, "offerings")
				}
				if len(diffs) > 0 {
					for _, d := range diffs {
						kinds[d]++
					}
					mismatches++
					if mismatches <= 5 {
						t.Errorf("%s differs in %v:\n got labels %v\nwant labels %v\n got cap %v\nwant cap %v\n got off %+v\nwant off %+v",
							w.Name, diffs, g.Labels, w.Labels, g.Capacity, w.Capacity, g.Offerings, w.Offerings)
					}
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d types differ: %v", mismatches, len(want), kinds)
			}
		})
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func equalOfferings(a, b cloudprovider.Offerings) bool {
	key := func(o cloudprovider.Offering) string { return o.Zone + "/" + o.CapacityType }
	if len(a) != len(b) {
		return false
	}
	m := map[string]cloudprovider.Offering{}
	for _, o := range a {
		m[key(o)] = o
	}
	for _, o := range b {
		g, ok := m[key(o)]
		if !ok || g.ZoneID != o.ZoneID || g.Available != o.Available || abs(g.Price-o.Price) > 1e-6 {
			return false
		}
	}
	return true
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestUnavailableOfferings(t *testing.T) {
	e, p, clk := newProvider(t, false)
	nc := resolvedClass(catalog.Builtin().DefaultZones(e.Options().Region))
	ctx := context.Background()
	zone := nc.Status.Subnets[0].Zone
	key := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: zone, CapacityType: cloudprovider.CapacityTypeSpot}
	available := func() map[cloudprovider.OfferingKey]bool {
		types, err := p.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		out := map[cloudprovider.OfferingKey]bool{}
		for _, it := range types {
			if it.Name != key.InstanceType {
				continue
			}
			for _, o := range it.Offerings {
				out[cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = o.Available
			}
		}
		return out
	}
	before := available()
	if !before[key] {
		t.Fatalf("%v not available to begin with: %v", key, before)
	}
	p.Unavailable().MarkUnavailable(key)
	after := available()
	for k, v := range after {
		if want := k != key; v != want {
			t.Errorf("after marking %v: %v available = %v, want %v", key, k, v, want)
		}
	}
	clk.Step(unavailable.DefaultTTL - time.Second)
	if available()[key] {
		t.Error("available again before the TTL ran out")
	}
	clk.Step(time.Second)
	if !available()[key] {
		t.Error("still unavailable after the TTL")
	}
}

func TestKubeletAndArchitecture(t *testing.T) {
	e, p, _ := newProvider(t, false)
	nc := resolvedClass(catalog.Builtin().DefaultZones(e.Options().Region))
	nc.Status.AMIs = nc.Status.AMIs[1:] // arm64 only
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(17)), KubeReserved: map[string]string{"cpu": "300m"}}
	types, err := p.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(types) == 0 {
		t.Fatal("no arm64 types")
	}
	for _, it := range types {
		if it.Labels[corev1.LabelArchStable] != "arm64" {
			t.Fatalf("%s is %s; only arm64 images exist", it.Name, it.Labels[corev1.LabelArchStable])
		}
		if pods := it.Capacity[corev1.ResourcePods]; pods.Value() != 17 {
			t.Fatalf("%s pods = %v, want maxPods 17", it.Name, pods.String())
		}
		if cpu := it.Overhead.KubeReserved[corev1.ResourceCPU]; cpu.MilliValue() != 300 {
			t.Fatalf("%s kube-reserved cpu = %v, want 300m", it.Name, cpu.String())
		}
	}
	nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyWindows2022)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-1"}}
	if _, err := p.List(context.Background(), nc); err == nil {
		t.Error("List for a Windows class succeeded")
	}
}

func TestListIsCachedAndCallsAreFew(t *testing.T) {
	e, p, _ := newProvider(t, true)
	nc := resolvedClass(catalog.Builtin().DefaultZones(e.Options().Region))
	ctx := context.Background()
	first, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.Calls())
	second, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Calls()) != n {
		t.Errorf("a second List made %d more calls", len(e.Calls())-n)
	}
	if &first[0] != &second[0] {
		t.Error("a second List rebuilt the result")
	}
	t.Logf("first List: %d API calls", n)
}

// TestBackgroundRefresh: data older than its refresh interval is reloaded
// in the background while List keeps answering; types (6 h) and prices
// (12 h) each on their own interval.
func TestBackgroundRefresh(t *testing.T) {
	e, p, clk := newProvider(t, true)
	nc := resolvedClass(catalog.Builtin().DefaultZones(e.Options().Region))
	ctx := context.Background()
	if _, err := p.List(ctx, nc); err != nil {
		t.Fatal(err)
	}
	calls := func(action string) int {
		n := 0
		for _, c := range e.Calls() {
			if c.Action == action {
				n++
			}
		}
		return n
	}
	refresh := func(step time.Duration) {
		t.Helper()
		gen := p.Generation()
		clk.Step(step)
		if _, err := p.List(ctx, nc); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, 5*time.Millisecond, "a background refresh", poll.Bool(func() bool { return p.Generation() != gen }))
	}
	pricing, types := calls("pricing:GetProducts"), calls("ec2:DescribeInstanceTypes")
	refresh(instancetype.DefaultTypeRefresh + time.Minute)
	if calls("ec2:DescribeInstanceTypes") <= types {
		t.Error("types were not reloaded after TypeRefresh")
	}
	if calls("pricing:GetProducts") != pricing {
		t.Error("prices were reloaded before PriceRefresh")
	}
	refresh(instancetype.DefaultPriceRefresh - instancetype.DefaultTypeRefresh)
	if calls("pricing:GetProducts") <= pricing {
		t.Error("prices were not reloaded after PriceRefresh")
	}
}

func spotPrice(types []*cloudprovider.InstanceType, name string) float64 {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeSpot {
				return o.Price
			}
		}
	}
	return -1
}

// Without DescribeSpotPriceHistory the provider says so: first load with
// the built-in rule, later loads keeping the last live prices; and back to
// live once the call works again.
func TestSpotPriceStatus(t *testing.T) {
	e, p, _ := newProvider(t, true)
	ctx := context.Background()
	nc := resolvedClass(catalog.Builtin().DefaultZones(e.Options().Region))
	if err := e.DenyAction("ec2:DescribeSpotPriceHistory"); err != nil {
		t.Fatal(err)
	}
	if st := p.SpotPriceStatus(); st.Known {
		t.Fatalf("status before any load: %+v", st)
	}
	synthetic, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	st := p.SpotPriceStatus()
	if !st.Known || st.Live || st.Stale || !strings.Contains(st.Error, "UnauthorizedOperation") || !strings.Contains(st.Fallback(), "built-in rule") {
		t.Fatalf("denied first load: %+v (%s)", st, st.Fallback())
	}
	e.ClearFaults()
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.SpotPriceStatus(); !st.Live || st.Fallback() != "" {
		t.Fatalf("after the call works again: %+v", st)
	}
	if err := e.DenyAction("ec2:DescribeSpotPriceHistory"); err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	stale, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.SpotPriceStatus(); st.Live || !st.Stale || !strings.Contains(st.Fallback(), "last live spot prices") {
		t.Fatalf("denied after a live load: %+v", st)
	}
	if got, want := spotPrice(stale, "m5.large"), spotPrice(live, "m5.large"); got != want || got <= 0 {
		t.Errorf("stale m5.large spot price %v, want the last live %v", got, want)
	}
	if spotPrice(synthetic, "m5.large") <= 0 {
		t.Error("the built-in rule priced no m5.large spot offering")
	}
}
