package eventsink_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/operator/eventsink"
)

// slow is an API that answers only when released, and records how many
// calls it had at once and what it was given.
type slow struct {
	release       chan struct{}
	running, most atomic.Int64
	mu            sync.Mutex
	written       []*eventsv1.Event
}

func (s *slow) write(ctx context.Context, e *eventsv1.Event) error {
	n := s.running.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	s.running.Add(-1)
	s.mu.Lock()
	s.written = append(s.written, e)
	s.mu.Unlock()
	return nil
}

func (s *slow) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.written)
}

func subject(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

func TestASlowAPIServerBoundsTheCallsAndTheGoroutinesAndDropsPastTheQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := &slow{release: make(chan struct{})}
	var counted atomic.Int64
	r := eventsink.New(ctx, api.write, scheme.Scheme, "dovetail", eventsink.Options{InFlight: 2, Queue: 3, Rate: -1, Dropped: func() { counted.Add(1) }})
	cm := subject("a")
	emit := func(i int) { r.Eventf(cm, nil, corev1.EventTypeNormal, "Tested", "Test", "event %d", i) }
	emit(0)
	emit(1)
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "two calls in flight", func() (bool, error) { return api.running.Load() == 2, nil })
	// Eight more while the API answers nothing: three wait, five are
	// dropped at once (Eventf returned for each).
	for i := 2; i < 10; i++ {
		emit(i)
	}
	if d := r.Dropped(); d != 5 || counted.Load() != 5 {
		t.Errorf("dropped %d, counted %d; want 5 each (2 in flight, 3 queued)", d, counted.Load())
	}
	// A storm of Events starts no goroutine.
	before := runtime.NumGoroutine()
	for i := range 5000 {
		emit(100 + i)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines %d -> %d after 5,000 Events against a stuck API, want no more", before, after)
	}
	if d := r.Dropped(); d != 5005 {
		t.Errorf("dropped %d, want 5,005", d)
	}
	close(api.release)
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "the five admitted Events written", func() (bool, error) { return api.count() == 5, nil })
	if m := api.most.Load(); m > 2 {
		t.Errorf("%d calls ran at once, want at most 2", m)
	}
	// With the API answering again the next one is written.
	emit(-1)
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "an Event after the backlog cleared", func() (bool, error) { return api.count() == 6, nil })
}

// answering is an API that answers at once, with a fake clock and a
// context that ends with the test.
func answering(t *testing.T) (context.Context, *slow, *clocktesting.FakeClock) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := &slow{release: make(chan struct{})}
	close(api.release)
	return ctx, api, clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
}

// TestEachReasonIsRateLimited: past its burst a reason gets its rate, the
// rest of its Events dropped and counted; another reason has a bucket of
// its own.
func TestEachReasonIsRateLimited(t *testing.T) {
	ctx, api, clk := answering(t)
	var counted atomic.Int64
	r := eventsink.New(ctx, api.write, scheme.Scheme, "dovetail", eventsink.Options{Rate: 2, Burst: 5, Queue: 100, Clock: clk,
		Dropped: func() { counted.Add(1) }})
	cm := subject("c")
	for i := range 20 {
		r.Eventf(cm, nil, corev1.EventTypeNormal, "Nominated", "Provisioning", "pod %d", i)
	}
	r.Eventf(cm, nil, corev1.EventTypeNormal, "Launched", "Launch", "one")
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "the burst and the other reason written", func() (bool, error) { return api.count() == 6, nil })
	if l, d := r.Limited(), r.Dropped(); l != 15 || d != 15 || counted.Load() != 15 {
		t.Errorf("limited %d, dropped %d, counted %d; want 15 each (a burst of 5 of 20)", l, d, counted.Load())
	}
	// A second refills two tokens.
	clk.Step(time.Second)
	for i := range 5 {
		r.Eventf(cm, nil, corev1.EventTypeNormal, "Nominated", "Provisioning", "later %d", i)
	}
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "two more after a second", func() (bool, error) { return api.count() == 8, nil })
	if l := r.Limited(); l != 18 {
		t.Errorf("limited %d, want 18", l)
	}
	// A limited Event is not remembered as written: its repeat, once
	// there are tokens, is written.
	clk.Step(time.Second)
	r.Eventf(cm, nil, corev1.EventTypeNormal, "Nominated", "Provisioning", "pod %d", 19)
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "the limited Event's repeat written", func() (bool, error) { return api.count() == 9, nil })
}

func TestRepeatsWithinTheDedupeWindowAreWrittenOnce(t *testing.T) {
	ctx, api, clk := answering(t)
	r := eventsink.New(ctx, api.write, scheme.Scheme, "dovetail", eventsink.Options{Dedupe: time.Minute, Clock: clk})
	cm := subject("b")
	for range 3 {
		r.Eventf(cm, nil, corev1.EventTypeWarning, "Blocked", "Disrupt", "pod %s has do-not-disrupt", "shop/cart")
	}
	r.Eventf(cm, nil, corev1.EventTypeWarning, "Blocked", "Disrupt", "pod %s has do-not-disrupt", "shop/other")
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "two Events written", func() (bool, error) { return api.count() == 2, nil })
	if d := r.Deduplicated(); d != 2 {
		t.Errorf("deduplicated %d, want 2", d)
	}
	clk.Step(time.Minute)
	r.Eventf(cm, nil, corev1.EventTypeWarning, "Blocked", "Disrupt", "pod %s has do-not-disrupt", "shop/cart")
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "the repeat after the window written", func() (bool, error) { return api.count() == 3, nil })
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, e := range api.written {
		if e.Regarding.Name != "b" || e.Regarding.Kind != "ConfigMap" || e.Namespace != "default" || e.Type != corev1.EventTypeWarning ||
			e.ReportingController != "dovetail" || e.ReportingInstance == "" || e.Action != "Disrupt" || e.EventTime.IsZero() {
			t.Errorf("event %+v: fields not as recorded", e)
		}
	}
	// An unsupported type is not recorded at all.
	r.Eventf(cm, nil, "Odd", "Blocked", "Disrupt", "x")
	if d := r.Deduplicated(); d != 2 {
		t.Errorf("deduplicated %d after an unsupported type, want 2", d)
	}
}

func TestTheRecorderWritesEventsToTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec, stop, r, err := eventsink.ForConfig(ctx, cp.RESTConfig(), scheme.Scheme, "dovetail", eventsink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "eventsink-subject"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "eventsink-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	long := make([]byte, 2000)
	for i := range long {
		long[i] = 'x'
	}
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Tested", "Test", "written through the bounded recorder %d", 1)
	rec.Eventf(node, cm, corev1.EventTypeWarning, "Long", "Test", "%s", string(long))
	poll.Until(t, 30*time.Second, 100*time.Millisecond, "the events", func() (bool, error) {
		found := 0
		evs, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.UID == cm.UID && e.Reason == "Tested" && e.Note == "written through the bounded recorder 1" && e.ReportingController == "dovetail" {
				found++
			}
			// A cluster-scoped object's Event goes to default; a note past
			// the API's 1 kB is cut, not refused.
			if e.Regarding.UID == node.UID && e.Reason == "Long" && len(e.Note) == 1024 && e.Related != nil && e.Related.UID == cm.UID {
				found++
			}
		}
		return found == 2, nil
	})
	if n := r.Dropped(); n != 0 {
		t.Errorf("%d events dropped with an idle API server", n)
	}
}
