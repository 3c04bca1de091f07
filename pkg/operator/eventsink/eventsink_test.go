package eventsink_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/operator/eventsink"
)

// slow is an API that answers only when released, and records how many
// calls it had at once.
type slow struct {
	release       chan struct{}
	running, most atomic.Int64
	done          atomic.Int64
}

func (s *slow) call() (*eventsv1.Event, error) {
	n := s.running.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-s.release
	s.running.Add(-1)
	s.done.Add(1)
	return &eventsv1.Event{}, nil
}

func (s *slow) Create(context.Context, *eventsv1.Event) (*eventsv1.Event, error) { return s.call() }
func (s *slow) Update(context.Context, *eventsv1.Event) (*eventsv1.Event, error) { return s.call() }
func (s *slow) Patch(context.Context, *eventsv1.Event, []byte) (*eventsv1.Event, error) {
	return s.call()
}

func TestASlowAPIServerBoundsTheCallsAndDropsThePastQueue(t *testing.T) {
	api := &slow{release: make(chan struct{})}
	var counted atomic.Int64
	s := eventsink.New(api, eventsink.Options{InFlight: 2, Queue: 3, Dropped: func() { counted.Add(1) }})
	var wg sync.WaitGroup
	var dropped atomic.Int64
	for range 10 {
		wg.Go(func() {
			_, err := s.Create(context.Background(), &eventsv1.Event{})
			if err != nil {
				var st *apierrors.StatusError
				if !errors.As(err, &st) || !apierrors.IsTooManyRequests(err) {
					t.Errorf("a dropped event's error is %v, want a 429 StatusError (the broadcaster does not retry those)", err)
				}
				dropped.Add(1)
			}
		})
	}
	// The five past the in-flight and queue bounds are refused at once,
	// while the API has answered nothing.
	poll.Until(t, 10*time.Second, 5*time.Millisecond, "five events dropped", func() (bool, error) { return dropped.Load() == 5, nil })
	if n := api.running.Load(); n != 2 {
		t.Errorf("%d calls running, want the 2 in flight", n)
	}
	close(api.release)
	wg.Wait()
	if got := api.done.Load(); got != 5 {
		t.Errorf("%d calls reached the API, want 5 (2 in flight + 3 queued)", got)
	}
	if m := api.most.Load(); m > 2 {
		t.Errorf("%d calls ran at once, want at most 2", m)
	}
	if dropped.Load() != 5 || counted.Load() != 5 || s.Dropped() != 5 {
		t.Errorf("dropped %d, counted %d, sink says %d; want 5 each", dropped.Load(), counted.Load(), s.Dropped())
	}
	// With the API answering again nothing is dropped.
	if _, err := s.Patch(context.Background(), &eventsv1.Event{}, nil); err != nil {
		t.Errorf("a call after the backlog cleared: %v", err)
	}
}

func TestTheRecorderWritesEventsThroughTheSink(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec, stop, sink, err := eventsink.Recorder(ctx, cp.RESTConfig(), scheme.Scheme, "dovetail", eventsink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "eventsink-subject"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Tested", "Test", "written through the bounded sink %d", 1)
	poll.Until(t, 30*time.Second, 100*time.Millisecond, "the event", func() (bool, error) {
		evs, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.UID == cm.UID && e.Reason == "Tested" && e.Note == "written through the bounded sink 1" && e.ReportingController == "dovetail" {
				return true, nil
			}
		}
		return false, nil
	})
	if n := sink.Dropped(); n != 0 {
		t.Errorf("%d events dropped with an idle API server", n)
	}
}
