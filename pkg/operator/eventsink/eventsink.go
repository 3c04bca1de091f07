package eventsink

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Defaults.
const (
	DefaultInFlight = 16
	DefaultQueue    = 1024
	// DefaultDedupe is how long an Event equal to one just written (same
	// object, type, reason, action, note and related object) is not
	// written again.
	DefaultDedupe = 2 * time.Minute
	// maxNote is the longest note events.k8s.io/v1 accepts (1 kB).
	maxNote = 1024
	// maxRecent bounds the Events remembered for deduplication.
	maxRecent = 8192
	// DefaultRate and DefaultBurst bound the Events of one reason: a
	// token bucket of DefaultBurst refilled at DefaultRate a second. A
	// burst of 30,000 pods nominated in one pass would otherwise be
	// 30,000 Event writes at once, most of what the controller asks of a
	// loaded API server.
	DefaultRate  = 10
	DefaultBurst = 100
)

// Options bound the recorder.
type Options struct {
	// InFlight is how many API calls may run at once; zero means
	// DefaultInFlight.
	InFlight int
	// Queue is how many more Events may wait for one; zero means
	// DefaultQueue.
	Queue int
	// Dedupe is how long a repeat of an Event is not written; zero means
	// DefaultDedupe, negative writes every repeat.
	Dedupe time.Duration
	// Rate is how many Events of one reason a second are written, with
	// Burst more at once; zero means DefaultRate and DefaultBurst,
	// negative no limit. The rest are dropped (counted and logged as
	// dropped ones are).
	Rate  float64
	Burst int
	// Dropped is called once per dropped Event (a metric's Inc); may be nil.
	Dropped func()
	// Log gets one line a minute at most while Events are dropped or
	// fail.
	Log logr.Logger
	// Clock stamps the Events; nil means the wall clock.
	Clock clock.PassiveClock
}

// Writer writes one Event to the API (events.k8s.io/v1 create).
type Writer func(ctx context.Context, e *eventsv1.Event) error

// Recorder is an events.EventRecorder with bounded cost: Eventf never
// blocks and starts no goroutine; InFlight workers write the queued
// Events; past the queue an Event is dropped at once and counted.
type Recorder struct {
	write      Writer
	scheme     *runtime.Scheme
	controller string
	instance   string
	opts       Options
	queue      chan *eventsv1.Event

	mu       sync.Mutex
	recent   map[string]time.Time // dedupe key -> when written
	buckets  map[string]flowcontrol.PassiveRateLimiter
	lastLog  time.Time
	dropped  int64
	reported int64
	failed   int64
	limited  int64

	deduped atomic.Int64
}

var _ events.EventRecorder = (*Recorder)(nil)

// New starts a recorder for reportingController that writes through w
// until ctx is done.
func New(ctx context.Context, w Writer, scheme *runtime.Scheme, reportingController string, opts Options) *Recorder {
	if opts.InFlight <= 0 {
		opts.InFlight = DefaultInFlight
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Dedupe == 0 {
		opts.Dedupe = DefaultDedupe
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rate == 0 {
		opts.Rate = DefaultRate
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	host, _ := os.Hostname()
	instance := reportingController + "-" + host
	if len(instance) > 128 {
		instance = instance[:128]
	}
	r := &Recorder{write: w, scheme: scheme, controller: reportingController, instance: instance, opts: opts,
		queue: make(chan *eventsv1.Event, opts.Queue), recent: map[string]time.Time{},
		buckets: map[string]flowcontrol.PassiveRateLimiter{}}
	for range opts.InFlight {
		go r.work(ctx)
	}
	return r
}

// ForConfig builds a Recorder over cfg's events.k8s.io/v1 API and returns
// it as the controllers' recorder, a stop function (Events still queued
// are not written: they are best effort) and the Recorder itself.
func ForConfig(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, reportingController string, opts Options) (events.EventRecorder, func(), *Recorder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := New(ctx, func(ctx context.Context, e *eventsv1.Event) error {
		_, err := cs.EventsV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
		return err
	}, scheme, reportingController, opts)
	return r, cancel, r, nil
}

// Dropped is how many Events were dropped: the queue was full, or their
// reason was over its rate (Limited of them).
func (r *Recorder) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Limited is how many Events were dropped because their reason was over
// its rate.
func (r *Recorder) Limited() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limited
}

// Deduplicated is how many Events were not written because an equal one
// was written within Options.Dedupe.
func (r *Recorder) Deduplicated() int64 { return r.deduped.Load() }

// Eventf implements events.EventRecorder. It never blocks.
func (r *Recorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		r.opts.Log.Error(nil, "unsupported event type: not recorded", "type", eventtype, "reason", reason)
		return
	}
	reg, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.opts.Log.Error(err, "no reference for an event's object: not recorded", "reason", reason)
		return
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(r.scheme, related); err != nil {
			rel = nil
		}
	}
	msg := note
	if len(args) > 0 {
		msg = fmt.Sprintf(note, args...)
	}
	if len(msg) > maxNote {
		msg = msg[:maxNote-3] + "..."
	}
	now := r.opts.Clock.Now()
	key := dedupeKey(reg, rel, eventtype, reason, action, msg)
	if !r.admit(key, now) {
		r.deduped.Add(1)
		return
	}
	if !r.allow(reason) {
		r.forget(key)
		r.mu.Lock()
		r.limited++
		r.mu.Unlock()
		r.drop()
		return
	}
	ns := reg.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(reg.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.MicroTime{Time: now},
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *reg,
		Related:             rel,
		Note:                msg,
		Type:                eventtype,
	}
	select {
	case r.queue <- e:
	default:
		r.forget(key)
		r.drop()
	}
}

func dedupeKey(reg, rel *corev1.ObjectReference, eventtype, reason, action, msg string) string {
	k := string(reg.UID) + "\x00" + reg.Kind + "\x00" + reg.Namespace + "\x00" + reg.Name + "\x00" + eventtype + "\x00" + reason + "\x00" + action + "\x00" + msg
	if rel != nil {
		k += "\x00" + string(rel.UID) + "\x00" + rel.Kind + "\x00" + rel.Namespace + "\x00" + rel.Name
	}
	return k
}

// admit reports whether an Event with the key is written now, and
// remembers it if so.
func (r *Recorder) admit(key string, now time.Time) bool {
	if r.opts.Dedupe < 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.recent[key]; ok && now.Sub(at) < r.opts.Dedupe {
		return false
	}
	if len(r.recent) >= maxRecent {
		for k, at := range r.recent {
			if now.Sub(at) >= r.opts.Dedupe {
				delete(r.recent, k)
			}
		}
		if len(r.recent) >= maxRecent {
			clear(r.recent) // a storm of distinct Events: start over
		}
	}
	r.recent[key] = now
	return true
}

// allow takes a token from the reason's bucket.
func (r *Recorder) allow(reason string) bool {
	if r.opts.Rate < 0 {
		return true
	}
	r.mu.Lock()
	b := r.buckets[reason]
	if b == nil {
		b = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(float32(r.opts.Rate), r.opts.Burst, r.opts.Clock)
		r.buckets[reason] = b
	}
	r.mu.Unlock()
	return b.TryAccept()
}

// forget undoes admit for an Event that was dropped, so that its next
// occurrence is not deduplicated against an Event never written.
func (r *Recorder) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.recent, key)
}

func (r *Recorder) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.queue:
			err := r.write(ctx, e)
			if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				r.fail(err)
			}
		}
	}
}

func (r *Recorder) drop() {
	if r.opts.Dropped != nil {
		r.opts.Dropped()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped++
	r.logLocked(nil)
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed++
	r.logLocked(err)
}

// logLocked writes one line a minute at most about dropped and failed
// Events.
func (r *Recorder) logLocked(err error) {
	now := r.opts.Clock.Now()
	if now.Sub(r.lastLog) < time.Minute {
		return
	}
	if err != nil {
		r.opts.Log.Error(err, "writing an Event", "failedSoFar", r.failed)
	} else {
		r.opts.Log.Info("dropping Events: over their reason's rate, or the API server is not keeping up", "dropped", r.dropped-r.reported,
			"overRateSoFar", r.limited, "ratePerReason", r.opts.Rate, "burst", r.opts.Burst, "inFlight", r.opts.InFlight, "queue", r.opts.Queue)
		r.reported = r.dropped
	}
	r.lastLog = now
}
