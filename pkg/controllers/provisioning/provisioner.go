package provisioning

import (
	"context"
	"errors"
	"fmt"
	toolscache "k8s.io/client-go/tools/cache"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Defaults of Options.
const (
	DefaultNominationTTL     = 10 * time.Second
	DefaultResyncPeriod      = 30 * time.Second
	DefaultCreateParallelism = 16
	maxRetryDelay            = 30 * time.Second
)

// Options tune the provisioner. The zero value is the peer's behaviour.
type Options struct {
	// BatchIdleDuration and BatchMaxDuration: the batch window (see
	// Batcher); 1 s and 10 s when zero.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// Region is the topology.kubernetes.io/region of new nodes.
	Region string
	// CommitmentsNamespace holds the ConfigMap dovetail-commitments
	// (pkg/commitment; the controller's namespace); "" reads none.
	CommitmentsNamespace string
	// PreferencePolicy and Seed are passed to the engine.
	PreferencePolicy engine.PreferencePolicy
	Seed             uint64
	// NominationTTL is how long a pod planned onto an existing node is
	// left to the kube-scheduler before it is planned again.
	NominationTTL time.Duration
	// ResyncPeriod: a pass runs at least this often while the controller
	// leads, so nothing waits on a missed event.
	ResyncPeriod time.Duration
	// DisableHandoff: do not write status.nominatedNodeName when a
	// NodeClaim's node comes up (see handoff). The scheduler then places
	// the pods as it likes: faster in large bursts, at the price of pods
	// landing off plan and some second launches.
	DisableHandoff bool
	// CreateParallelism is how many NodeClaims are created at once.
	CreateParallelism int
	// MaxInstanceTypes caps the instance types a NodeClaim offers the
	// cloud (DefaultMaxInstanceTypes when zero).
	MaxInstanceTypes int
	// NodeOverlays (feature gate NodeOverlay): the NodeOverlays in the
	// cluster adjust the instance types' prices and capacity before the
	// engine plans (snapshot.ApplyOverlays); off, they are not read.
	NodeOverlays bool
	// CapacityBuffers (feature gate CapacityBuffer): keep room for the
	// CapacityBuffers the capacity buffer controller resolved (see
	// buffers.go). Off, CapacityBuffers are not read at all.
	CapacityBuffers bool
	// SpreadDefaults are the cluster's default topology spread
	// constraints (SCHEDULER_CONFIG, package spreaddefaults), given to
	// every pod without its own whose selector can be deduced from the
	// Services and controllers that select it. Nil: none, and Services,
	// ReplicationControllers, ReplicaSets and StatefulSets are not read.
	SpreadDefaults []corev1.TopologySpreadConstraint
}

func (o Options) withDefaults() Options {
	if o.NominationTTL <= 0 {
		o.NominationTTL = DefaultNominationTTL
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.CreateParallelism <= 0 {
		o.CreateParallelism = DefaultCreateParallelism
	}
	return o
}

// Provisioner launches NodeClaims for pods the kube-scheduler cannot place
// (see the package doc).
type Provisioner struct {
	kube        client.Client // records its NodeClaim writes in writes
	apiReader   client.Reader
	writes      *nodeclaimutil.Writes
	cloud       cloudprovider.CloudProvider
	clock       clock.Clock
	recorder    events.EventRecorder
	metrics     *Metrics
	unavailable *unavailable.Cache
	opts        Options
	log         logr.Logger

	batcher *Batcher
	mem     *memory
	// podStore is the pod informer's store (set by watch): listPods reads
	// the cached pods through it without copying a Pod struct per pod.
	podStore toolscache.Store
	// kinds counts the unbound pods of each kind (set by watch) for the
	// hand-off.
	kinds *unboundKinds
	// buffered is set while some CapacityBuffer is kept: pods binding to
	// nodes then trigger a pass (they may take the buffer's room).
	buffered atomic.Bool
	mu       sync.Mutex // one pass at a time
	seq      uint64
	retries  int
}

var _ manager.LeaderElectionRunnable = (*Provisioner)(nil)

// New returns a provisioner. kube reads through the manager's cache;
// NodeClaims are read from it once it shows the provisioner's own
// NodeClaim writes, else from the API server (the manager's API reader,
// set by Register). unavailable is the shared cache of offerings the cloud
// refused; m may be nil (no metrics).
func New(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder,
	m *Metrics, unavailable *unavailable.Cache, opts Options) *Provisioner {
	opts = opts.withDefaults()
	if m == nil {
		m, _ = NewMetrics(nil)
	}
	writes := nodeclaimutil.NewWrites()
	return &Provisioner{
		kube: writes.Client(kube), apiReader: kube, writes: writes, cloud: cloud, clock: clk, recorder: recorder, metrics: m, unavailable: unavailable,
		opts: opts, log: logr.Discard(),
		batcher: NewBatcher(clk, opts.BatchIdleDuration, opts.BatchMaxDuration),
		mem:     newMemory(),
	}
}

// Name is the controller's name in logs and metrics.
func (p *Provisioner) Name() string { return "provisioning" }

// NeedLeaderElection: only the leader provisions.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Trigger asks for a provisioning pass (batched).
func (p *Provisioner) Trigger() { p.batcher.Trigger() }

// Register adds the provisioner to the manager: event handlers on pods,
// nodes, NodeClaims and NodePools feed the batcher, and the provisioning
// loop runs while this replica leads.
func (p *Provisioner) Register(ctx context.Context, mgr manager.Manager) error {
	p.apiReader = mgr.GetAPIReader()
	p.log = mgr.GetLogger().WithName(p.Name())
	if err := p.writes.Watch(ctx, mgr.GetCache()); err != nil {
		return fmt.Errorf("provisioning: NodeClaim informer: %w", err)
	}
	if err := p.watch(ctx, mgr.GetCache()); err != nil {
		return err
	}
	return mgr.Add(p)
}

// Start runs the provisioning loop until ctx ends: wait for a batch, run
// a pass, repeat. A failed pass is retried with backoff (1 s doubling to
// 30 s, on the clock); a pass also runs every ResyncPeriod.
func (p *Provisioner) Start(ctx context.Context) error {
	p.log.Info("starting", "batchIdle", p.batcher.idle, "batchMax", p.batcher.max)
	p.Trigger() // after a restart, pods may already be waiting
	go p.resync(ctx)
	for p.batcher.Wait(ctx) {
		if _, err := p.Provision(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.retries++
			delay := min(time.Duration(1<<min(p.retries-1, 5))*time.Second, maxRetryDelay)
			p.log.Error(err, "provisioning pass failed", "retryIn", delay)
			p.after(ctx, delay, p.Trigger)
			continue
		}
		p.retries = 0
	}
	return nil
}

func (p *Provisioner) resync(ctx context.Context) {
	for {
		t := p.clock.NewTimer(p.opts.ResyncPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
			p.Trigger()
		}
	}
}

func (p *Provisioner) after(ctx context.Context, d time.Duration, f func()) {
	t := p.clock.NewTimer(d)
	go func() {
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
			f()
		}
	}()
}

// Result is what one pass did.
type Result struct {
	// Plan is the engine's plan (nil when nothing was pending).
	Plan *engine.Plan
	// Created are the NodeClaims created, in plan order.
	Created []*karpv1.NodeClaim
	// Pending is the number of pods the pass planned.
	Pending int
	// Skipped lists the NodePools left out, with why.
	Skipped map[string]string
	// Replacements are the NodeClaims (new or already launching) that
	// received pods moved off the nodes given to Replace.
	Replacements []string
}

// Provision runs one pass now, without waiting for a batch: snapshot,
// solve, create NodeClaims, nominate pods, report the rest. A partial
// failure (some NodeClaims not created) returns the Result and an error;
// the pods of the missing NodeClaims are planned again on the next pass.
func (p *Provisioner) Provision(ctx context.Context) (*Result, error) {
	return p.pass(ctx, nil)
}

// Replace plans capacity for the movable pods of the given nodes as if
// they were pending, with those nodes excluded, and creates the NodeClaims
// it needs, before anything is evicted. Its Result.Replacements name the
// NodeClaims those pods are planned onto (new ones, or ones already
// launching); pods that fit on existing nodes need none. The nodes stay
// excluded from later plans until they are gone, and their pods stay
// reserved on the replacements while they run, so a restarted or
// concurrent pass does not give that capacity away. Pods that are not
// movable (DaemonSet, static, unowned) are not planned.
func (p *Provisioner) Replace(ctx context.Context, nodes ...string) (*Result, error) {
	evac := map[string]bool{}
	for _, n := range nodes {
		evac[n] = true
	}
	p.mem.mu.Lock()
	for n := range evac {
		p.mem.evacuating[n] = true
	}
	p.mem.mu.Unlock()
	return p.pass(ctx, evac)
}

// ReplacementsFor is Replace returning only the names of the NodeClaims
// the pods are planned onto: the interruption controller's Replacer, which
// the controllers package wires to this without the two importing each
// other.
func (p *Provisioner) ReplacementsFor(ctx context.Context, nodes ...string) ([]string, error) {
	res, err := p.Replace(ctx, nodes...)
	if err != nil || res == nil {
		return nil, err
	}
	return res.Replacements, nil
}

// typeSource serves the instance types read for each pool this pass.
type typeSource map[string][]*cloudprovider.InstanceType

func (s typeSource) InstanceTypes(np *karpv1.NodePool, _ *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	return s[np.Name], nil
}

var _ snapshot.InstanceTypeSource = typeSource(nil)

func (p *Provisioner) pass(ctx context.Context, evacuate map[string]bool) (*Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	begin := p.clock.Now()
	v, err := p.read(ctx, evacuate)
	readTime := p.clock.Since(begin)
	if err != nil {
		p.metrics.Batches.WithLabelValues("error").Inc()
		return nil, err
	}
	p.metrics.PendingPods.Set(float64(v.waiting))
	p.metrics.NominatedPods.Set(float64(v.nominated))
	ignored := 0
	for ref, pod := range v.pending {
		if !v.evacuated[ref] && IgnoredPod(pod) {
			ignored++
		}
	}
	p.metrics.IgnoredPods.Set(float64(ignored))
	p.metrics.IgnoredPodsAlias.Set(float64(ignored))
	res := &Result{Pending: len(v.pending), Skipped: v.skipped}
	buffers := snapshot.Buffers(v.cluster.CapacityBuffers, v.cluster.PodTemplates)
	p.buffered.Store(len(buffers) > 0)
	if len(v.pending) == 0 && len(buffers) == 0 {
		p.metrics.Batches.WithLabelValues("empty").Inc()
		p.metrics.UnschedulablePods.WithLabelValues(ControllerLabel).Set(0)
		p.bufferMetrics(nil)
		p.clearLimitEvents(nil)
		return res, nil
	}
	in, err := snapshot.Build(v.cluster, typeSource(v.types), snapshot.Options{
		Region: p.opts.Region,
		Engine: engine.Options{PreferencePolicy: p.opts.PreferencePolicy, Seed: p.opts.Seed, SkipLowerBound: true},
	})
	if err != nil {
		p.metrics.Batches.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("taking the snapshot: %w", err)
	}
	p.seq++
	id := strconv.FormatUint(p.seq, 10)
	depth := p.metrics.QueueDepth.WithLabelValues(ControllerLabel, id)
	depth.Set(float64(len(in.Pods)))
	start := p.clock.Now()
	plan, err := engine.Solve(in)
	solveTime := p.clock.Since(start)
	p.metrics.QueueDepth.DeleteLabelValues(ControllerLabel, id)
	p.metrics.SchedulingDuration.WithLabelValues(ControllerLabel).Observe(solveTime.Seconds())
	if err != nil {
		p.metrics.Batches.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("solving: %w", err)
	}
	p.metrics.Batches.WithLabelValues("solved").Inc()
	res.Plan = plan
	actStart := p.clock.Now()
	err = p.act(ctx, v, plan, res)
	actTime := p.clock.Since(actStart)
	bufferPods := 0
	for _, r := range plan.Buffers {
		bufferPods += r.Wanted
	}
	p.metrics.UnschedulablePods.WithLabelValues(ControllerLabel).Set(float64(len(plan.Unschedulable) - unschedulableBufferPods(plan)))
	p.bufferMetrics(plan)
	if berr := p.bufferStatus(ctx, v, plan); berr != nil {
		err = errors.Join(err, berr)
	}
	p.log.Info("provisioning pass", "pending", len(v.pending), "bufferPods", bufferPods, "existing", len(plan.Existing),
		"newNodeClaims", len(res.Created), "pricePerHour", plan.PricePerHour, "unschedulable", len(plan.Unschedulable),
		"skippedNodePools", len(v.skipped), "read", readTime, "solve", solveTime, "act", actTime, "total", p.clock.Since(begin))
	return res, err
}

// act carries the plan out: nominations for pods placed on existing nodes
// and in-flight NodeClaims, new NodeClaims for the rest, events for the
// pods that cannot be placed and for NodePools at their limits.
func (p *Provisioner) act(ctx context.Context, v *view, plan *engine.Plan, res *Result) error {
	now := p.clock.Now()
	replacements := map[string]bool{}
	for _, pl := range plan.Existing {
		pod := v.pending[pl.Pod]
		if pod == nil {
			continue
		}
		t := target{name: pl.Node, inFlight: pl.InFlight, evacuee: v.evacuated[pl.Pod]}
		if !pl.InFlight {
			t.until = now.Add(p.opts.NominationTTL)
		} else if v.evacuated[pl.Pod] {
			replacements[pl.Node] = true
		}
		p.nominate(pod, t)
	}

	created := make([]*karpv1.NodeClaim, len(plan.NodeClaims))
	errs := make([]error, len(plan.NodeClaims))
	workqueue.ParallelizeUntil(ctx, p.opts.CreateParallelism, len(plan.NodeClaims), func(i int) {
		planned := &plan.NodeClaims[i]
		np := v.pools[planned.NodePool]
		if np == nil {
			errs[i] = fmt.Errorf("planned NodeClaim %s: unknown NodePool %q", planned.Name, planned.NodePool)
			return
		}
		reason := ReasonProvisioning
		for _, ref := range planned.Pods {
			if v.evacuated[ref] {
				reason = ReasonInterruption
				break
			}
		}
		nc := NewNodeClaim(np, planned, v.types[np.Name], reason, p.opts.MaxInstanceTypes)
		if err := p.kube.Create(ctx, nc); err != nil {
			errs[i] = fmt.Errorf("creating a NodeClaim of NodePool %s for %d pods: %w", np.Name, len(planned.Pods), err)
			return
		}
		created[i] = nc
	})
	for i := range plan.NodeClaims {
		nc := created[i]
		if nc == nil {
			continue
		}
		res.Created = append(res.Created, nc)
		for _, ref := range plan.NodeClaims[i].Pods {
			if pod := v.pending[ref]; pod != nil {
				if v.evacuated[ref] {
					replacements[nc.Name] = true
				}
				p.nominate(pod, target{name: nc.Name, inFlight: true, evacuee: v.evacuated[ref]})
			}
		}
	}
	for name := range replacements {
		res.Replacements = append(res.Replacements, name)
	}
	slices.Sort(res.Replacements)

	for _, pe := range plan.Unschedulable {
		if pod := v.pending[pe.Pod]; pod != nil {
			p.failed(pod, pe)
		}
	}
	p.limitEvents(v, plan)
	return errors.Join(errs...)
}

// Event reasons.
const (
	// ReasonNominated (on a pod): the pod is planned onto a NodeClaim
	// being launched, or onto an existing node.
	ReasonNominated = "Nominated"
	// ReasonFailedScheduling (on a pod): no NodePool can take it; the note
	// starts with the engine's reason code.
	ReasonFailedScheduling = "FailedScheduling"
	// ReasonLimitReached (on a NodePool): its limits stopped a scale-up.
	ReasonLimitReached = "NodePoolLimitReached"
)

const maxNote = 1000 // events.k8s.io/v1 notes are at most 1 kB

func truncate(s string) string {
	if len(s) <= maxNote {
		return s
	}
	return s[:maxNote-3] + "..."
}

func (p *Provisioner) nominate(pod *corev1.Pod, t target) {
	t.pod = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	t.verdict = schedulerVerdict(pod)
	p.mem.mu.Lock()
	if old, ok := p.mem.noms[pod.UID]; ok && old.name == t.name && !old.since.IsZero() {
		t.since = old.since
	} else if !t.inFlight {
		t.since = p.clock.Now()
	}
	p.mem.noms[pod.UID] = t
	delete(p.mem.failedEvent, pod.UID)
	announce := p.mem.nominatedEvent[pod.UID] != t.name
	p.mem.nominatedEvent[pod.UID] = t.name
	p.mem.mu.Unlock()
	if !announce || p.recorder == nil {
		return
	}
	if t.inFlight {
		p.recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonNominated, "Provisioning", "Pod should schedule on NodeClaim %s, which is being launched", t.name)
	} else {
		p.recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonNominated, "Provisioning", "Pod fits on existing node %s", t.name)
	}
}

func (p *Provisioner) failed(pod *corev1.Pod, pe engine.PodError) {
	p.mem.mu.Lock()
	delete(p.mem.noms, pod.UID)
	delete(p.mem.nominatedEvent, pod.UID)
	announce := p.mem.failedEvent[pod.UID] != string(pe.Code)
	p.mem.failedEvent[pod.UID] = string(pe.Code)
	p.mem.mu.Unlock()
	if announce && p.recorder != nil {
		p.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, "Provisioning", "%s", truncate(fmt.Sprintf("Failed to provision a node for the pod: %s: %s", pe.Code, pe.Message)))
	}
}

// limitMarker is how the engine names a pool whose limits stop a new node
// in an unschedulable pod's message.
func limitMarker(pool string) string {
	return fmt.Sprintf("nodepool %q: a new node would exceed the pool's limits", pool)
}

// limitEvents records one event per NodePool when its limits start
// stopping a scale-up, and forgets it once they no longer do.
func (p *Provisioner) limitEvents(v *view, plan *engine.Plan) {
	hit := map[string]string{}
	for _, pe := range plan.Unschedulable {
		for name := range v.pools {
			if _, done := hit[name]; done {
				continue
			}
			if i := strings.Index(pe.Message, limitMarker(name)); i >= 0 {
				msg := pe.Message[i+len(fmt.Sprintf("nodepool %q: ", name)):]
				if j := strings.Index(msg, "; nodepool "); j >= 0 {
					msg = msg[:j]
				}
				hit[name] = msg
			}
		}
	}
	p.clearLimitEvents(hit)
	for name, msg := range hit {
		p.mem.mu.Lock()
		_, announced := p.mem.limitEvent[name]
		p.mem.limitEvent[name] = msg
		p.mem.mu.Unlock()
		if !announced && p.recorder != nil {
			p.recorder.Eventf(v.pools[name], nil, corev1.EventTypeWarning, ReasonLimitReached, "Provisioning", "%s",
				truncate("Scale-up stopped at the NodePool's limits: "+msg))
		}
	}
}

// clearLimitEvents forgets the pools not in keep.
func (p *Provisioner) clearLimitEvents(keep map[string]string) {
	p.mem.mu.Lock()
	defer p.mem.mu.Unlock()
	for name := range p.mem.limitEvent {
		if _, ok := keep[name]; !ok {
			delete(p.mem.limitEvent, name)
		}
	}
}
