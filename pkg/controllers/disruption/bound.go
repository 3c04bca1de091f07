package disruption

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
)

// DefaultLowerBoundInterval is the least time between two computations of
// the fleet's lower bound (Options.LowerBoundInterval).
const DefaultLowerBoundInterval = 30 * time.Second

// lowerBoundMaxAge: a bound older than this is computed again even when
// nothing it depends on changed (spot prices move).
const lowerBoundMaxAge = 10 * time.Minute

// bound keeps dovetail_fleet_lower_bound_price_per_hour. The bound is a
// solve of every pod on fresh nodes: at a thousand nodes it costs seconds
// and a gigabyte, so it is not computed on every pass. A pass hands its
// input over; the bound is computed in the background when what it depends
// on (the pods on managed nodes and pending, the pools and their offerings,
// the unavailable offerings) changed since the last one, at most once per
// interval, or when the last one is older than lowerBoundMaxAge. Between
// two computations the metric keeps the last value, which is the bound of
// the cluster as it was then.
type bound struct {
	mu       sync.Mutex
	key      uint64
	started  time.Time
	running  bool
	done     chan struct{} // closed when the running computation ends
	computed int           // computations started, for tests
	// compute is planner.LowerBound (replaced in tests).
	compute func(*planner.Input) (float64, error)
	set     func(float64)
}

// offer is called by every pass with its planner input; it starts a
// computation when one is due.
func (b *bound) offer(ctx context.Context, in *planner.Input, w *world, now time.Time, interval time.Duration) {
	key := boundKey(in, w)
	b.mu.Lock()
	due := !b.running && (b.computed == 0 ||
		(key != b.key && now.Sub(b.started) >= interval) || now.Sub(b.started) >= lowerBoundMaxAge)
	if !due {
		b.mu.Unlock()
		return
	}
	b.running, b.key, b.started = true, key, now
	b.computed++
	done := make(chan struct{})
	b.done = done
	b.mu.Unlock()
	go func() {
		v, err := b.compute(in)
		b.mu.Lock()
		b.running = false
		b.mu.Unlock()
		defer close(done)
		if err != nil {
			log.FromContext(ctx).V(1).Info("fleet lower bound", "error", err.Error())
			return
		}
		b.set(v)
	}()
}

// wait blocks until the computation running when it is called (if any)
// has ended and set its value (tests).
func (b *bound) wait(ctx context.Context) {
	b.mu.Lock()
	d := b.done
	b.mu.Unlock()
	if d == nil {
		return
	}
	select {
	case <-d:
	case <-ctx.Done():
	}
}

// boundKey fingerprints what the lower bound depends on.
func boundKey(in *planner.Input, w *world) uint64 {
	h := fnv.New64a()
	str := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	num := func(f float64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
		h.Write(b[:])
	}
	var uids []string
	for _, p := range in.Cluster.Pods {
		if p != nil {
			uids = append(uids, "p"+string(p.UID))
		}
	}
	for _, en := range in.Cluster.Nodes {
		if en.Node == nil || in.Nodes[en.Node.Name].NodePool == "" {
			continue
		}
		for _, p := range en.Pods {
			if planner.Reschedulable(p) {
				uids = append(uids, "n"+string(p.UID))
			}
		}
	}
	slices.Sort(uids)
	for _, u := range uids {
		str(u)
	}
	var pools []*karpv1.NodePool
	for _, np := range w.pools {
		pools = append(pools, np)
	}
	slices.SortFunc(pools, func(a, b *karpv1.NodePool) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	for _, np := range pools {
		str(np.Name)
		num(float64(np.Generation))
		for _, it := range w.types[np.Name] {
			str(it.Name)
			for _, o := range it.Offerings {
				str(o.Zone + "/" + o.CapacityType)
				num(o.Price)
				if o.Available {
					num(1)
				}
			}
		}
	}
	for _, u := range in.Cluster.Unavailable {
		str(u.InstanceType + "/" + u.Zone + "/" + u.CapacityType)
	}
	for _, ds := range in.Cluster.DaemonSets {
		if ds != nil {
			str(string(ds.UID))
			num(float64(ds.Generation))
		}
	}
	return h.Sum64()
}
