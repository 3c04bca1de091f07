package catalog

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// karpenterAllocatable reads the allocatable figures the Karpenter
// documentation publishes per type (AL2023, default block devices), copied
// into testdata by the generator.
func karpenterAllocatable(t *testing.T) map[string]corev1.ResourceList {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "karpenter-allocatable.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.ResourceList{}
	for name, fields := range raw {
		l := corev1.ResourceList{}
		for k, v := range fields {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				var n int64
				if err := json.Unmarshal(v, &n); err != nil {
					t.Fatalf("%s.%s: %s", name, k, v)
				}
				s = fmt.Sprint(n)
			}
			if k == "ephemeralStorage" {
				k = string(corev1.ResourceEphemeralStorage)
			}
			l[corev1.ResourceName(k)] = resource.MustParse(s)
		}
		out[name] = l
	}
	return out
}

// allocatable computes the default-settings allocatable through the shared
// model, the way every consumer sees it.
func allocatable(ty *Type, s KubeletSettings) corev1.ResourceList {
	r := s.resolve()
	capacity := ty.capacity(r)
	it := cloudprovider.InstanceType{Name: ty.Name, Capacity: capacity, Overhead: ty.overhead(r, capacity, nil)}
	return it.Allocatable()
}

// TestAllocatableMatchesKarpenterDocs compares every type's allocatable
// resources with the figures Karpenter documents. All resources match for
// every type except one explained class of differences:
//
//   - pod-eni: the documentation omits vpc.amazonaws.com/pod-eni for some
//     trunking-compatible types (new families such as c9g, new metal sizes,
//     hpc7g, i4i.large). The documentation page (2026-07-11) was generated
//     from an older VPC-limits table than the one in the data set
//     (2026-08-18), which marks them trunking compatible with branch ENIs.
//     Allowed only where the documentation has no pod-eni entry at all and
//     dovetail's figure is the data set's branch-ENI count.
//
// The arm64 memory difference the documentation shows is not listed here: it
// is the Arm64ReservedMiB rule, applied to every arm64 type (see
// TestArm64ReservedMemoryExplainsDocs).
func TestAllocatableMatchesKarpenterDocs(t *testing.T) {
	docs := karpenterAllocatable(t)
	c := Builtin()
	exact, podENIVintage := 0, 0
	var notDocumented []string
	for _, ty := range c.Types() {
		want, ok := docs[ty.Name]
		if !ok {
			notDocumented = append(notDocumented, ty.Name)
			continue
		}
		got := allocatable(ty, KubeletSettings{})
		names := map[corev1.ResourceName]bool{}
		for n := range want {
			names[n] = true
		}
		for n := range got {
			names[n] = true
		}
		var diffs []string
		explained := true
		for _, n := range sortedResourceNames(names) {
			g, gok := got[n]
			w, wok := want[n]
			if gok && wok && g.Cmp(w) == 0 {
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s: got %v want %v", n, qstr(g, gok), qstr(w, wok)))
			if !(n == ResourceAWSPodENI && !wok && ty.TrunkingCompatible && g.Value() == int64(ty.BranchENIs)) {
				explained = false
			}
		}
		switch {
		case len(diffs) == 0:
			exact++
		case explained:
			podENIVintage++
		default:
			t.Errorf("%s (%s): %v", ty.Name, ty.Arch, diffs)
		}
	}
	t.Logf("%d types: %d match the Karpenter documentation exactly, %d differ only by the documentation's older pod-eni table, %d undocumented %v",
		len(c.Types()), exact, podENIVintage, len(notDocumented), notDocumented)
	if exact+podENIVintage != len(docs) {
		t.Errorf("compared %d types, the documentation has %d", exact+podENIVintage, len(docs))
	}
	// Pin the figures so that a change in the data or the rules is noticed.
	if exact != 1307 || podENIVintage != 56 {
		t.Errorf("exact %d, pod-eni vintage %d; want 1307 and 56", exact, podENIVintage)
	}
}

// TestArm64ReservedMemoryExplainsDocs derives, with its own arithmetic, the
// allocatable memory of every documented type with and without the 64 MiB
// arm64 reservation: with it every type matches the documentation; without
// it every arm64 type is too high by 64 MiB less the VM overhead on it.
func TestArm64ReservedMemoryExplainsDocs(t *testing.T) {
	docs := karpenterAllocatable(t)
	c := Builtin()
	formula := func(ty *Type, reserved int64) int64 {
		m := ty.MemoryMiB - reserved
		overhead := int64(math.Ceil(float64(m) * 0.075))
		pods := int64(ty.MaxENIs*(ty.IPv4PerENI-1) + 2)
		return m - overhead - (11*pods + 255) - 100
	}
	arm := 0
	for _, ty := range c.Types() {
		want, ok := docs[ty.Name]
		if !ok {
			continue
		}
		docMiB := want.Memory().Value() / (1 << 20)
		reserved := int64(0)
		if ty.Arch == "arm64" {
			reserved = 64
			arm++
			plain := formula(ty, 0)
			if gap := plain - docMiB; gap < 59 || gap > 60 {
				t.Errorf("%s: documentation %d MiB, formula without the reservation %d MiB: gap %d, want 59-60", ty.Name, docMiB, plain, gap)
			}
		}
		if got := formula(ty, reserved); got != docMiB {
			t.Errorf("%s (%s): formula %d MiB, documentation %d MiB", ty.Name, ty.Arch, got, docMiB)
		}
	}
	if arm < 300 {
		t.Errorf("only %d documented arm64 types", arm)
	}
}

func sortedResourceNames(m map[corev1.ResourceName]bool) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func qstr(q resource.Quantity, ok bool) string {
	if !ok {
		return "absent"
	}
	return q.String()
}
