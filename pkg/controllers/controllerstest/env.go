package controllerstest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/operator/cachetrim"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Timeout bounds every Eventually: generous, because the machine running
// the tests may be busy.
const Timeout = 60 * time.Second

// Scheme returns a new scheme with the built-in Kubernetes types and
// dovetail's API types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme, karpv1alpha1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("controllerstest: building the scheme: %v", err))
		}
	}
	return s
}

// Controller is what a dovetail controller offers the manager.
type Controller interface {
	Name() string
	Register(ctx context.Context, mgr manager.Manager) error
}

// Env is one test's view of the cluster (see the package doc).
type Env struct {
	T           testing.TB
	Client      client.Client // uncached, cluster-admin
	Manager     manager.Manager
	Clock       *clocktesting.FakeClock
	Cloud       *Cloud
	Metrics     *metrics.Registry
	Unavailable *unavailable.Cache
	// Prefix is unique to the test and safe in object names.
	Prefix string

	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{}
	namespaces []string
	log        *testWriter
}

var setGlobalLogger sync.Once

// New builds an Env on the cluster behind cfg. The manager is built (with
// dovetail's cache indexes) but not started: build the controllers from
// the Env's parts, then call Start.
func New(t testing.TB, cfg *rest.Config) *Env {
	t.Helper()
	setGlobalLogger.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	scheme := Scheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("building the test client: %v", err)
	}
	w := &testWriter{t: t}
	// DOVETAIL_TEST_LOG=debug shows the controllers' info and V(1) lines.
	level := slog.LevelWarn
	if os.Getenv("DOVETAIL_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	logger := logr.FromSlogHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		// The operator's cache: the controllers are tested on trimmed
		// Pods and Nodes, as they run.
		Cache: cachetrim.Options(),
		// ... and a client that refuses to write a whole trimmed object.
		NewClient: cachetrim.NewClient,
	})
	if err != nil {
		t.Fatalf("building the manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := nodeclaimutil.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		cancel()
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	e := &Env{
		T: t, Client: c, Manager: mgr, Clock: clk, Cloud: NewCloud(), Metrics: metrics.NewRegistry(),
		Unavailable: unavailable.New(clk, 0), Prefix: prefixFor(t.Name()),
		ctx: ctx, cancel: cancel, log: w,
	}
	t.Cleanup(e.cleanup)
	return e
}

var unsafe = regexp.MustCompile(`[^a-z0-9]+`)

func prefixFor(name string) string {
	p := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-")
	}
	return p
}

// LogWriter returns a writer that sends lines to the test log until the
// test ends (for loggers of components the test starts itself).
func (e *Env) LogWriter() io.Writer { return e.log }

// Context is cancelled when the test ends.
func (e *Env) Context() context.Context { return e.ctx }

// Recorder returns an event recorder of the manager.
func (e *Env) Recorder() events.EventRecorder { return e.Manager.GetEventRecorder("dovetail") }

// Start registers the controllers and starts the manager; it returns once
// the manager's caches have synced.
func (e *Env) Start(ctrls ...Controller) {
	e.T.Helper()
	for _, c := range ctrls {
		if err := c.Register(e.ctx, e.Manager); err != nil {
			e.T.Fatalf("registering %s: %v", c.Name(), err)
		}
	}
	e.done = make(chan struct{})
	go func() {
		defer close(e.done)
		if err := e.Manager.Start(e.ctx); err != nil {
			e.log.Logf("manager stopped: %v", err)
		}
	}()
	syncCtx, cancel := context.WithTimeout(e.ctx, Timeout)
	defer cancel()
	if !e.Manager.GetCache().WaitForCacheSync(syncCtx) {
		e.T.Fatal("the manager's cache did not sync")
	}
}

// Namespace creates a namespace for the test and returns its name.
func (e *Env) Namespace() string {
	e.T.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: e.Prefix + "-"}}
	if len(ns.GenerateName) > 50 {
		ns.GenerateName = ns.GenerateName[:49] + "-"
	}
	e.Create(ns)
	e.namespaces = append(e.namespaces, ns.Name)
	return ns.Name
}

// Create creates obj, failing the test on error, and returns it.
func (e *Env) Create(obj client.Object) client.Object {
	e.T.Helper()
	if err := e.Client.Create(e.ctx, obj); err != nil {
		e.T.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	return obj
}

// Get reads obj by its name (and namespace) into obj.
func (e *Env) Get(obj client.Object) error {
	return e.Client.Get(e.ctx, client.ObjectKeyFromObject(obj), obj)
}

// Delete deletes obj; NotFound is fine.
func (e *Env) Delete(obj client.Object) {
	e.T.Helper()
	if err := e.Client.Delete(e.ctx, obj); client.IgnoreNotFound(err) != nil {
		e.T.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

// Eventually polls cond every 50 ms until it returns true, failing the
// test after Timeout with what and the last error.
func (e *Env) Eventually(what string, cond func() (bool, error)) {
	e.T.Helper()
	Eventually(e.T, Timeout, what, cond)
}

// Eventually polls cond every 50 ms until it returns true, failing t after
// timeout with what and cond's last error.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	poll.Until(t, timeout, 50*time.Millisecond, what, cond)
}

// Consistently checks cond on every poll until d has passed on the wall
// clock, failing at the first false: for "this must not happen" checks.
// d should be short; it bounds the test's run time.
func Consistently(t testing.TB, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	poll.While(t, d, 50*time.Millisecond, what, cond)
}

// NotFound reports whether obj is gone from the API server.
func (e *Env) NotFound(obj client.Object) (bool, error) {
	err := e.Get(obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// Events returns the events about the object (matched by kind and name),
// oldest first.
func (e *Env) Events(kind, name string) []eventsv1.Event {
	e.T.Helper()
	var list eventsv1.EventList
	if err := e.Client.List(e.ctx, &list); err != nil {
		e.T.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// EventsAbout returns the events about exactly this object (matched by
// UID, so objects of the same name in earlier tests do not count), oldest
// first.
func (e *Env) EventsAbout(obj client.Object) []eventsv1.Event {
	e.T.Helper()
	var list eventsv1.EventList
	if err := e.Client.List(e.ctx, &list); err != nil {
		e.T.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.UID == obj.GetUID() {
			out = append(out, ev)
		}
	}
	return out
}

// EventuallyEvent waits for an event with the reason about the object and
// returns it.
func (e *Env) EventuallyEvent(kind, name, reason string) eventsv1.Event {
	e.T.Helper()
	var found eventsv1.Event
	e.Eventually(fmt.Sprintf("event %s on %s %s", reason, kind, name), func() (bool, error) {
		for _, ev := range e.Events(kind, name) {
			if ev.Reason == reason {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// EventuallyEventAbout waits for an event with the reason about exactly
// this object (matched by UID) and returns it.
func (e *Env) EventuallyEventAbout(obj client.Object, reason string) eventsv1.Event {
	e.T.Helper()
	var found eventsv1.Event
	e.Eventually(fmt.Sprintf("event %s about %s", reason, obj.GetName()), func() (bool, error) {
		for _, ev := range e.EventsAbout(obj) {
			if ev.Reason == reason {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// cleanup stops the manager and empties the cluster of dovetail objects.
func (e *Env) cleanup() {
	e.cancel()
	if e.done != nil {
		<-e.done
	}
	e.log.close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c := e.Client
	strip := func(obj client.Object) {
		if len(obj.GetFinalizers()) > 0 {
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
			_ = c.Patch(ctx, obj, patch)
		}
		_ = c.Delete(ctx, obj)
	}
	for _, list := range []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}} {
		if err := c.List(ctx, list); err != nil {
			e.T.Errorf("cleanup: listing %T: %v", list, err)
			continue
		}
		items, _ := metaItems(list)
		for _, obj := range items {
			strip(obj)
		}
	}
	// Pods go at once, and their owners first, so that no pod of this test
	// is still pending (and planned for) while the next one runs: the
	// namespace controller alone takes its time.
	for _, ns := range e.namespaces {
		for _, owner := range []client.Object{&appsv1.Deployment{}, &appsv1.ReplicaSet{}, &appsv1.StatefulSet{}} {
			_ = c.DeleteAllOf(ctx, owner, client.InNamespace(ns), client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
		_ = c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	Eventually(e.T, Timeout, "cleanup to remove the test's pods", func() (bool, error) {
		left := 0
		for _, ns := range e.namespaces {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				return false, err
			}
			for i := range pods.Items {
				strip(&pods.Items[i])
			}
			left += len(pods.Items)
		}
		if left > 0 {
			return false, fmt.Errorf("%d pods left", left)
		}
		return true, nil
	})
	Eventually(e.T, Timeout, "cleanup to remove every NodeClaim and Node", func() (bool, error) {
		var ncs karpv1.NodeClaimList
		var nodes corev1.NodeList
		if err := c.List(ctx, &ncs); err != nil {
			return false, err
		}
		if err := c.List(ctx, &nodes); err != nil {
			return false, err
		}
		for i := range ncs.Items {
			strip(&ncs.Items[i])
		}
		for i := range nodes.Items {
			strip(&nodes.Items[i])
		}
		return len(ncs.Items) == 0 && len(nodes.Items) == 0, nil
	})
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *karpv1.NodeClaimList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.NodeList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *karpv1.NodePoolList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *awsv1.EC2NodeClassList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unsupported list %T", list)
	}
	return out, nil
}

// testWriter sends log lines to t.Log until the test's cleanup closes it
// (logging after a test ends panics).
type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

var _ io.Writer = (*testWriter)(nil)

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) Logf(format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
