package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Defaults of Options.
const (
	DefaultInterval         = 10 * time.Second
	DefaultActiveInterval   = time.Second
	DefaultValidationPeriod = 15 * time.Second
	DefaultTimeout          = 10 * time.Minute
)

// NodeClaimFactory builds the NodeClaim for a planned replacement of a
// pool, as provisioning does (the caller sets its name and command label).
type NodeClaimFactory func(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string) *karpv1.NodeClaim

// Options tune the controller; zero values take the defaults above.
type Options struct {
	// NodeOverlays (feature gate NodeOverlay): the NodeOverlays in the
	// cluster adjust the instance types' prices and capacity the planner
	// compares nodes and replacements at; off, they are not read.
	NodeOverlays bool
	// CommitmentsNamespace holds the ConfigMap dovetail-commitments
	// (pkg/commitment; the controller's namespace); "" reads none.
	CommitmentsNamespace string
	// Interval between passes while nothing is in progress.
	Interval time.Duration
	// ActiveInterval between passes while a command or a validation is in
	// progress.
	ActiveInterval time.Duration
	// ValidationPeriod is how long an Empty or Underutilized command is
	// held before the planner is asked again (already scaled by the
	// caller; negative means none).
	ValidationPeriod time.Duration
	// Timeout is how long a command may wait for its replacements before
	// it is rolled back.
	Timeout time.Duration
	// LowerBoundInterval is the least time between two computations of
	// the fleet's lower bound (dovetail_fleet_lower_bound_price_per_hour),
	// which run in the background and only when the pods or pools changed
	// (see bound).
	LowerBoundInterval time.Duration
	// SpotToSpotConsolidation is the peer's feature gate.
	SpotToSpotConsolidation bool
	// MinSavings is the consolidation savings threshold of NodePools
	// without their own annotations (--consolidation-min-savings and
	// --consolidation-min-savings-per-pod); zero is off.
	MinSavings planner.MinSavings
	// NodeRepair (the peer's feature gate) replaces nodes whose conditions
	// match one of the cloud provider's RepairPolicies past its toleration
	// (reason Unhealthy).
	NodeRepair bool
	// TerminateFirstDrift and TerminateFirstRepair (the peer's feature
	// gates): a drifted (unhealthy) node whose replacement cannot launch
	// first, its NodePool's limits counting the node until it is gone, is
	// deleted first and provisioning launches for its pods once its
	// capacity is released (planner.Options). Off, it is kept.
	TerminateFirstDrift, TerminateFirstRepair bool
	// PlacementGate installs the MutatingAdmissionPolicy PlacementName,
	// which holds the new pods of the owners a command is recreating
	// behind the scheduling gate GateName until they are nominated. Off
	// (or where the policy cannot be installed), the recreated pods are
	// nominated without it.
	PlacementGate bool
	// Snapshot are the options of snapshot.Build (region, engine options).
	Snapshot snapshot.Options
	// CapacityBuffers (feature gate CapacityBuffer): the CapacityBuffers'
	// room is part of the plan, so nodes holding it are not consolidated
	// away.
	CapacityBuffers bool
	// SpreadDefaults are the cluster's default topology spread
	// constraints (SCHEDULER_CONFIG), given to every pod without its own
	// as provisioning does (nodeclaimutil.ApplySpreadDefaults): a
	// consolidation must keep the spread kube-scheduler will enforce on
	// the recreated pods.
	SpreadDefaults []corev1.TopologySpreadConstraint
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.ActiveInterval <= 0 {
		o.ActiveInterval = DefaultActiveInterval
	}
	if o.ValidationPeriod == 0 {
		o.ValidationPeriod = DefaultValidationPeriod
	}
	if o.ValidationPeriod < 0 {
		o.ValidationPeriod = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.LowerBoundInterval <= 0 {
		o.LowerBoundInterval = DefaultLowerBoundInterval
	}
	return o
}

// Controller executes disruption plans (see the package doc).
type Controller struct {
	kube         client.Client // records its NodeClaim writes in writes
	apiReader    client.Reader
	writes       *nodeclaimutil.Writes
	cloud        cloudprovider.CloudProvider
	clock        clock.Clock
	recorder     events.EventRecorder
	metrics      *metrics.Registry
	unavailable  *unavailable.Cache
	newNodeClaim NodeClaimFactory
	opts         Options
	synced       func(context.Context) bool

	mu sync.Mutex
	// held are consolidation commands waiting out the validation period.
	held *held
	// waiting are the commands whose DisruptionWaitingReadiness event was
	// sent (so it is sent once).
	waiting map[string]bool
	// lastCode is the kept code last reported per node (events on change).
	lastCode map[string]planner.Code
	// badMinSavings is the last invalid-annotation message reported per
	// NodePool (reportMinSavings).
	badMinSavings map[string]string
	// lastSummary is the last plan summary logged (logged on change).
	lastSummary string
	// world is what the last plan was made from.
	world *world
	// lastPlan is when the last plan was made, lastDraining how many
	// candidate NodeClaims were being deleted then.
	lastPlan     time.Time
	lastDraining int
	kick         chan struct{}
	// bound keeps the fleet lower bound metric (computed in the
	// background).
	bound *bound
	// nom nominates the recreated pods of evicted owners to their planned
	// nodes.
	nom *nominator
	// podStore is the pod informer's store (set by Register): the pass
	// reads the cached pods through it, without copying a Pod struct.
	podStore toolscache.Store
	// gate keeps the placement policy installed and its owners current.
	gate *gate
}

type held struct {
	until    time.Time
	commands []planner.Command
}

// New returns the controller. unavailable may be nil.
func New(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder,
	m *metrics.Registry, unavailableCache *unavailable.Cache, factory NodeClaimFactory, opts Options) *Controller {
	writes := nodeclaimutil.NewWrites()
	return &Controller{
		kube: writes.Client(kube), apiReader: kube, writes: writes, cloud: cloud, clock: clk, recorder: recorder, metrics: m, unavailable: unavailableCache,
		newNodeClaim: factory, opts: opts.withDefaults(),
		waiting: map[string]bool{}, lastCode: map[string]planner.Code{}, badMinSavings: map[string]string{}, kick: make(chan struct{}, 1),
		bound: &bound{compute: planner.LowerBound, set: m.FleetLowerBoundPricePerHour.Set},
		nom:   newNominator(),
		gate:  &gate{on: opts.PlacementGate},
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "disruption" }

// Register adds the loop to the manager. A RunnableFunc needs leader
// election, so only the leader disrupts.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if c.newNodeClaim == nil {
		return errors.New("disruption: no NodeClaim factory")
	}
	c.apiReader = mgr.GetAPIReader()
	c.synced = mgr.GetCache().WaitForCacheSync
	if err := c.writes.Watch(ctx, mgr.GetCache()); err != nil {
		return fmt.Errorf("disruption: NodeClaim informer: %w", err)
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("disruption: pod informer: %w", err)
	}
	c.podStore = nodeclaimutil.Store(inf)
	if _, err := inf.AddEventHandler(c.podHandler()); err != nil {
		return fmt.Errorf("disruption: pod event handler: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(c.runNominator)); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(c.run))
}

func (c *Controller) run(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(c.Name())
	ctx = logr.NewContext(ctx, logger)
	if c.synced != nil && !c.synced(ctx) {
		return nil // stopping
	}
	for {
		next, err := c.Pass(ctx)
		if err != nil {
			logger.Error(err, "disruption pass")
			next = c.opts.Interval
		}
		select {
		case <-ctx.Done():
			c.clearGate(logr.NewContext(context.Background(), logger))
			return nil
		case <-c.kick:
		case <-c.clock.After(next):
		}
	}
}

// clearGate empties the placement policy's owners when the leader stops,
// so that no pod is gated while no controller lifts the gates; the next
// leader writes them again from the commands' annotations.
func (c *Controller) clearGate(ctx context.Context) {
	if !c.gate.enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.gate.sync(ctx, c.kube, map[string]string{}, c.clock.Now()); err != nil {
		log.FromContext(ctx).Error(err, "clearing the placement gate's owners at shutdown")
	}
}

// Kick asks for a pass at once.
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Pass runs one pass (see the package doc) and returns when the next one
// is due. Passes are serialized.
func (c *Controller) Pass(ctx context.Context) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	st, err := c.read(ctx)
	if err != nil {
		return 0, err
	}
	if !st.inSync {
		return c.opts.ActiveInterval, nil
	}
	// Commands in progress first: drive them, plan nothing new meanwhile.
	active := false
	draining := 0
	var errs []error
	for _, cmd := range st.commands {
		for _, nc := range cmd.candidates {
			if nc.DeletionTimestamp != nil {
				draining++
			}
		}
		done, err := c.advance(ctx, st, cmd, now)
		if err != nil {
			errs = append(errs, err)
		}
		active = active || !done
	}
	// The recreated pods of evicted owners go where the commands planned
	// them (between passes, the pod event handler does the same at once).
	c.nom.update(ctx, st, now)
	owners := c.nom.owners()
	c.gate.ensure(ctx, c.kube, owners, now)
	if err := c.gate.sync(ctx, c.kube, owners, now); err != nil {
		errs = append(errs, err)
	}
	if err := c.nom.nominate(ctx, c.kube, c.podStore, now); err != nil {
		errs = append(errs, err)
	}
	if err := c.untaintStale(ctx, st); err != nil {
		errs = append(errs, err)
	}
	// Reboots for repair in progress: ended when the node comes back. They
	// hold nothing else (the planner counts them against the budgets).
	rebooting, err := c.driveReboots(ctx, st, now)
	if err != nil {
		errs = append(errs, err)
	}
	if err := c.liftHolds(ctx, st); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return c.opts.ActiveInterval, errors.Join(errs...)
	}
	if active {
		return c.opts.ActiveInterval, nil
	}

	if c.held != nil && now.Before(c.held.until) {
		return c.held.until.Sub(now), nil
	}
	// While candidates of finished commands are still being deleted, they
	// count against the budgets: look every ActiveInterval, and plan again
	// as soon as one is gone (its room in the budget is free), not a whole
	// Interval later.
	if c.held == nil && (draining > 0 || c.lastDraining > 0) && draining >= c.lastDraining &&
		!c.lastPlan.IsZero() && now.Sub(c.lastPlan) < c.opts.Interval {
		c.lastDraining = draining
		return c.opts.ActiveInterval, nil
	}
	c.lastPlan, c.lastDraining = now, draining
	plan, err := c.plan(ctx, st, now)
	if err != nil {
		return c.opts.Interval, err
	}
	var start []planner.Command
	if c.held != nil {
		start = c.validate(st, plan)
		c.held = nil
	} else {
		var hold []planner.Command
		for _, cmd := range c.fitting(st, plan) {
			if cmd.Reason == planner.ReasonDrifted || cmd.Reason == planner.ReasonUnhealthy || c.opts.ValidationPeriod == 0 {
				start = append(start, cmd)
			} else {
				hold = append(hold, cmd)
			}
		}
		if len(start) > 0 {
			hold = nil // the held ones assumed the started ones would not run yet
		}
		if len(hold) > 0 {
			c.held = &held{until: now.Add(c.opts.ValidationPeriod), commands: hold}
		}
	}
	started := 0
	for _, cmd := range start {
		if err := c.start(ctx, st, cmd, now); err != nil {
			errs = append(errs, err)
			break
		}
		started++
	}
	switch {
	case len(errs) > 0:
		return c.opts.ActiveInterval, errors.Join(errs...)
	case started > 0 || c.held != nil || draining > 0 || rebooting:
		return c.opts.ActiveInterval, nil
	}
	return c.opts.Interval, nil
}

// fitting returns the prefix of the plan's commands that fit the budgets
// allowed now and do not place pods onto an earlier command's
// replacements (those are not launched yet when this one would run).
func (c *Controller) fitting(st *state, plan *planner.Plan) []planner.Command {
	allowed := map[string]map[planner.Reason]int{}
	for pool, m := range plan.Allowed {
		allowed[pool] = map[planner.Reason]int{}
		for r, n := range m {
			allowed[pool][r] = n
		}
	}
	planned := map[string]bool{}
	var out []planner.Command
	for _, cmd := range plan.Commands {
		per := map[string]int{}
		for _, n := range cmd.Nodes {
			per[st.poolOfNode(n)]++
		}
		fits := true
		for pool, n := range per {
			if left, ok := allowed[pool][cmd.Reason]; ok && left >= 0 && n > left {
				fits = false
			}
		}
		for _, pl := range cmd.Placements {
			if planned[pl.Node] {
				fits = false
			}
		}
		if !fits {
			break
		}
		for pool, n := range per {
			if left, ok := allowed[pool][cmd.Reason]; ok && left >= 0 {
				allowed[pool][cmd.Reason] = left - n
			}
		}
		for _, r := range cmd.Replacements {
			planned[r.Name] = true
		}
		out = append(out, cmd)
	}
	return out
}

// validate returns the held commands that still hold in the new plan: a
// command of the same reason over exactly the same nodes, a delete still a
// delete. The new plan's version of each is returned.
//
// An Empty command holds as well when each of its nodes is still empty and
// eligible (in an Empty command of the new plan, or kept only by the
// budget) and the pools' Empty budgets still allow them all: during a
// scale-down more nodes become empty between the two plans and the new
// plan may pick another subset of them, which is no reason to wait again.
func (c *Controller) validate(st *state, plan *planner.Plan) []planner.Command {
	fresh := c.fitting(st, plan)
	emptyOK := map[string]bool{}
	for _, f := range plan.Commands {
		if f.Reason == planner.ReasonEmpty {
			for _, n := range f.Nodes {
				emptyOK[n] = true
			}
		}
	}
	for _, k := range plan.Kept {
		// Kept by the Empty budget: an empty node ("empty; budget for Empty ...").
		if k.Code == planner.CodeBudget && strings.HasPrefix(k.Reason, "empty; ") {
			emptyOK[k.Node] = true
		}
	}
	emptyLeft := map[string]int{} // what the budgets allow now
	for pool, m := range plan.Allowed {
		if n, ok := m[planner.ReasonEmpty]; ok {
			emptyLeft[pool] = n
		}
	}
	var out []planner.Command
	for _, h := range c.held.commands {
		found := false
		for _, f := range fresh {
			if f.Reason == h.Reason && sameSet(f.Nodes, h.Nodes) && (len(h.Replacements) > 0 || len(f.Replacements) == 0) {
				out = append(out, f)
				found = true
				break
			}
		}
		if !found && h.Reason == planner.ReasonEmpty && len(h.Replacements) == 0 && len(out) == 0 {
			per := map[string]int{}
			ok := true
			for _, n := range h.Nodes {
				per[st.poolOfNode(n)]++
				ok = ok && emptyOK[n]
			}
			for pool, n := range per {
				if left, limited := emptyLeft[pool]; limited && left >= 0 && n > left {
					ok = false
				}
			}
			if ok {
				// Alone: the new plan's other commands assumed its own
				// choice of empty nodes.
				return []planner.Command{h}
			}
		}
		if !found {
			for _, name := range h.NodeClaims {
				if nc := st.claimByName[name]; nc != nil {
					c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonUnconsolidatable, "Validate",
						"after the %s validation period the command no longer holds: %s", c.opts.ValidationPeriod, h.Message)
				}
			}
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}
