package disruption

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// The fleet lower bound is computed in the background, only when the pods,
// pools or offerings changed, at most once per interval, and again once it
// is older than lowerBoundMaxAge.
func TestBoundRecomputesOnlyOnChange(t *testing.T) {
	var calls atomic.Int32
	var got atomic.Value
	b := &bound{
		compute: func(in *planner.Input) (float64, error) {
			calls.Add(1)
			return float64(len(in.Cluster.Pods)), nil
		},
		set: func(v float64) { got.Store(v) },
	}
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}}
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1}}
	w := &world{pools: map[string]*karpv1.NodePool{"a": np}, types: typeSource{"a": {
		{Name: "m5.large", Offerings: cloudprovider.Offerings{{Zone: "z", CapacityType: "spot", Price: 0.05, Available: true}}},
	}}}
	in := func(pods ...*corev1.Pod) *planner.Input {
		return &planner.Input{Cluster: &engine.Input{Pods: pods}}
	}
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := func(at time.Duration, i *planner.Input, wantCalls int32, want float64) {
		t.Helper()
		b.offer(ctx, i, w, t0.Add(at), 30*time.Second)
		b.wait(ctx)
		if n := calls.Load(); n != wantCalls {
			t.Fatalf("at %s: %d computations, want %d", at, n, wantCalls)
		}
		if v, _ := got.Load().(float64); v != want {
			t.Fatalf("at %s: metric %v, want %v", at, v, want)
		}
	}
	step(0, in(pod("1")), 1, 1)                        // the first pass computes
	step(5*time.Second, in(pod("1")), 1, 1)            // nothing changed
	step(10*time.Second, in(pod("1"), pod("2")), 1, 1) // changed, but within the interval
	step(31*time.Second, in(pod("1"), pod("2")), 2, 2) // changed, interval passed
	step(90*time.Second, in(pod("2"), pod("1")), 2, 2) // same set in another order
	np.Generation = 2
	step(100*time.Second, in(pod("1"), pod("2")), 3, 2) // the pool changed
	w.types["a"][0].Offerings[0].Price = 0.04
	step(140*time.Second, in(pod("1"), pod("2")), 4, 2)                  // an offering's price changed
	step(140*time.Second+lowerBoundMaxAge, in(pod("1"), pod("2")), 5, 2) // too old
}
