package termination

import (
	"context"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Eviction backoff bounds: a refused eviction (429, a PDB said no) is
// retried after 100 ms, then twice as long each time, up to 10 s.
const (
	MinEvictionBackoff = 100 * time.Millisecond
	MaxEvictionBackoff = 10 * time.Second
)

// evictAll evicts the pods whose backoff has passed and returns when the
// earliest backed-off pod may be tried again (ok false when none waits).
func (c *Controller) evictAll(ctx context.Context, node *corev1.Node, pods []*corev1.Pod, now time.Time) (next time.Time, ok bool) {
	for _, p := range pods {
		if at, waiting := c.backoff.waiting(p.UID, now); waiting {
			if !ok || at.Before(next) {
				next, ok = at, true
			}
			continue
		}
		if at, retry := c.evict(ctx, node, p); retry && (!ok || at.Before(next)) {
			next, ok = at, true
		}
	}
	return next, ok
}

// evict asks the Eviction API to evict one pod. It returns when to retry
// when the eviction was refused or failed.
func (c *Controller) evict(ctx context.Context, node *corev1.Node, p *corev1.Pod) (time.Time, bool) {
	uid := p.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := c.kube.SubResource("eviction").Create(ctx, p, eviction)
	c.metrics.PodsEvictionRequests.WithLabelValues(statusCode(err)).Inc()
	switch {
	case err == nil:
		// The cache may not show the pod terminating for a moment; hold
		// off re-evicting it until it has had time to catch up.
		c.backoff.evicted(uid)
		c.recorder.Eventf(p, node, corev1.EventTypeNormal, ReasonEvicted, "Evict", "Evicted to drain node %s", node.Name)
		return time.Time{}, false
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by another pod of the same name.
		c.backoff.forget(uid)
		return time.Time{}, false
	}
	at, first := c.backoff.fail(uid)
	if first {
		c.recorder.Eventf(p, node, corev1.EventTypeWarning, ReasonEvictionBlocked, "Evict",
			"Cannot evict pod to drain node %s (retrying with backoff): %v", node.Name, err)
	}
	if !apierrors.IsTooManyRequests(err) {
		log.FromContext(ctx).Error(err, "evicting pod", "pod", p.Namespace+"/"+p.Name, "node", node.Name)
	}
	return at, true
}

func statusCode(err error) string {
	if err == nil {
		return "201"
	}
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Code != 0 {
		return strconv.Itoa(int(s.Status().Code))
	}
	return "error"
}

// evictionBackoff remembers, per pod, when an eviction may be tried again.
// It is shared by the controller's workers.
type evictionBackoff struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	entries map[types.UID]*backoffEntry
}

type backoffEntry struct {
	next  time.Time
	delay time.Duration
}

func newEvictionBackoff(clk clock.PassiveClock) *evictionBackoff {
	return &evictionBackoff{clock: clk, entries: map[types.UID]*backoffEntry{}}
}

// waiting reports whether the pod must wait, and until when.
func (b *evictionBackoff) waiting(uid types.UID, now time.Time) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[uid]
	if !ok || !now.Before(e.next) {
		return time.Time{}, false
	}
	return e.next, true
}

// fail records a refused eviction and returns when to retry; first is
// true for the pod's first refusal.
func (b *evictionBackoff) fail(uid types.UID) (next time.Time, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.prune(now)
	e, ok := b.entries[uid]
	if !ok {
		e = &backoffEntry{delay: MinEvictionBackoff}
		b.entries[uid] = e
	} else {
		e.delay = min(2*e.delay, MaxEvictionBackoff)
	}
	e.next = now.Add(e.delay)
	return e.next, !ok
}

// evictedSettle is how long a successfully evicted pod is not evicted again,
// so that a reconcile working from a cache that does not yet show the pod
// terminating does not evict it twice.
const evictedSettle = 5 * time.Second

// evicted records a successful eviction: the pod waits evictedSettle before
// it could be tried again.
func (b *evictionBackoff) evicted(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entries[uid] = &backoffEntry{next: b.clock.Now().Add(evictedSettle), delay: MinEvictionBackoff}
}

func (b *evictionBackoff) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, uid)
}

// prune drops entries not refreshed for a long time (their pods are gone
// some other way), so the map does not grow without bound.
func (b *evictionBackoff) prune(now time.Time) {
	for uid, e := range b.entries {
		if now.Sub(e.next) > 10*time.Minute {
			delete(b.entries, uid)
		}
	}
}
