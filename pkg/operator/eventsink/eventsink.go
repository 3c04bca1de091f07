package eventsink

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// Defaults.
const (
	DefaultInFlight = 16
	DefaultQueue    = 1024
)

// Options bound the sink.
type Options struct {
	// InFlight is how many API calls may run at once; zero means
	// DefaultInFlight.
	InFlight int
	// Queue is how many more may wait for one; zero means DefaultQueue.
	Queue int
	// Dropped is called once per dropped Event (a metric's Inc); may be nil.
	Dropped func()
	// Log gets one line a minute at most while Events are dropped.
	Log logr.Logger
}

// Sink is an events.EventSink that bounds the calls of another.
type Sink struct {
	inner    events.EventSink
	slots    chan struct{}
	admitted atomic.Int64 // running or waiting
	limit    int64
	opts     Options

	mu       sync.Mutex
	lastLog  time.Time
	dropped  int64
	reported int64
}

// errDropped is what a dropped Event's call returns: a StatusError, which
// the broadcaster does not retry.
var errDropped = apierrors.NewTooManyRequests("dovetail: event dropped: too many events waiting for the API server", 0)

// New wraps inner.
func New(inner events.EventSink, opts Options) *Sink {
	if opts.InFlight <= 0 {
		opts.InFlight = DefaultInFlight
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	return &Sink{inner: inner, slots: make(chan struct{}, opts.InFlight), limit: int64(opts.InFlight + opts.Queue), opts: opts}
}

// Dropped is how many Events the sink has dropped.
func (s *Sink) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *Sink) do(ctx context.Context, call func() (*eventsv1.Event, error)) (*eventsv1.Event, error) {
	if s.admitted.Add(1) > s.limit {
		s.admitted.Add(-1)
		s.drop()
		return nil, errDropped
	}
	defer s.admitted.Add(-1)
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.slots }()
	return call()
}

func (s *Sink) drop() {
	if s.opts.Dropped != nil {
		s.opts.Dropped()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped++
	if now := time.Now(); now.Sub(s.lastLog) >= time.Minute {
		s.opts.Log.Info("dropping Events: the API server is not keeping up", "dropped", s.dropped-s.reported, "inFlight", s.opts.InFlight, "queue", s.opts.Queue)
		s.lastLog, s.reported = now, s.dropped
	}
}

// Create implements events.EventSink.
func (s *Sink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.do(ctx, func() (*eventsv1.Event, error) { return s.inner.Create(ctx, e) })
}

// Update implements events.EventSink.
func (s *Sink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.do(ctx, func() (*eventsv1.Event, error) { return s.inner.Update(ctx, e) })
}

// Patch implements events.EventSink.
func (s *Sink) Patch(ctx context.Context, old *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	return s.do(ctx, func() (*eventsv1.Event, error) { return s.inner.Patch(ctx, old, data) })
}

// quiet drops the broadcaster's own error line for a dropped Event (the
// sink counts and logs those itself) and passes everything else on.
type quiet struct{ logr.LogSink }

func (q quiet) Error(err error, msg string, kv ...any) {
	if errors.Is(err, errDropped) {
		return
	}
	q.LogSink.Error(err, msg, kv...)
}

func (q quiet) WithValues(kv ...any) logr.LogSink { return quiet{q.LogSink.WithValues(kv...)} }
func (q quiet) WithName(n string) logr.LogSink    { return quiet{q.LogSink.WithName(n)} }

// Recorder builds an events broadcaster on a bounded Sink over cfg's
// events.k8s.io/v1 API, starts it, and returns the recorder for
// reportingController and a stop function (flushes nothing; Events are
// best effort).
func Recorder(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, reportingController string, opts Options) (events.EventRecorder, func(), *Sink, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	sink := New(&events.EventSinkImpl{Interface: cs.EventsV1()}, opts)
	b := events.NewBroadcaster(sink)
	log := opts.Log
	if log.GetSink() != nil {
		log = log.WithSink(quiet{log.GetSink()})
	}
	if err := b.StartRecordingToSinkWithContext(klog.NewContext(ctx, log)); err != nil {
		return nil, nil, nil, err
	}
	return b.NewRecorder(scheme, reportingController), b.Shutdown, sink, nil
}
