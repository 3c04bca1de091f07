package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/kubenode"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
	"github.com/dovetail-sh/dovetail/pkg/operator"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// The soak's fixed settings.
const (
	// timeScale of the emulator (and the controller's liveness timeouts),
	// as test/e2e: instances boot in 0.1-0.2 s, a spot notice lasts 12 s.
	timeScale = 0.1
	namespace = "soak"
	// throttleFraction of the AWS calls answered RequestLimitExceeded
	// from the scale-up to the end of the drift.
	throttleFraction = 0.3
	// icedTypes is how many of the planned instance types (the most used
	// of the cheapest offerings simulate picks) get insufficient capacity
	// during the scale-up and the interruptions.
	icedTypes = 3
	// budget replaces every example pool's disruption budgets (team-b's
	// weekday "0" window would otherwise decide the result by the clock).
	budget = "20%"
	// consolidateAfter from the scale-down on (Never before, so the
	// scale-up is measured as planned).
	consolidateAfter = "10s"
	// costTolerance is the allowed gap between the fleet and simulate.
	costTolerance = 0.10
	// Kill intervals: a uniform draw in [killMin, killMax].
	killMin, killMax = 5 * time.Second, 13 * time.Second
)

// phase is one step of the cycle with its share of the kills and its
// time bound.
type phase struct {
	name    string
	weight  int // share of the kills
	timeout time.Duration
	run     func(ctx context.Context) error
}

type soak struct {
	cfg   config
	out   io.Writer
	begin time.Time

	stk   *stack.Stack
	aws   *localaws.Component
	ctrl  *ctrlproc.Component
	admin *awsemu.AdminClient
	kube  client.Client
	cs    *kubernetes.Clientset
	watch *fleetWatcher

	region string
	zones  []string

	mu        sync.Mutex
	phaseName string
	killsBy   map[string]int
	kills     int
	restarts  []time.Duration // how long each restart took until ready
	killTimes []time.Time
	rng       *rand.Rand

	rep *report

	// instances are every instance the poller saw (the emulator forgets
	// terminated ones after a while).
	instMu    sync.Mutex
	instances map[string]awsemu.Instance
}

func (s *soak) logf(format string, args ...any) {
	el := time.Since(s.begin).Round(time.Second)
	fmt.Fprintf(s.out, "[%02d:%02d] %s\n", int(el.Minutes()), int(el.Seconds())%60, fmt.Sprintf(format, args...))
}

func (s *soak) setPhase(name string) {
	s.mu.Lock()
	s.phaseName = name
	s.mu.Unlock()
}

// run brings the stack up, runs the phases, measures and tears down.
func (s *soak) run(ctx context.Context) (*report, error) {
	s.rng = rand.New(rand.NewPCG(s.cfg.seed, 13))
	s.killsBy = map[string]int{}
	s.rep = &report{Seed: s.cfg.seed, KillsWanted: s.cfg.kills}
	dir, cleanup, err := s.workDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	s.rep.Dir = dir

	s.setPhase("stack")
	s.logf("phase stack: starting the local stack in %s (control plane, AWS emulator at time scale %g, controller with SpotToSpotConsolidation)", dir, timeScale)
	if err := s.up(ctx, dir); err != nil {
		return s.rep, err
	}
	defer func() {
		s.logf("stopping the local stack")
		if err := s.stk.Close(); err != nil {
			s.logf("stopping the stack: %v", err)
		}
	}()
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	s.watch = newFleetWatcher()
	dyn, err := dynamic.NewForConfig(s.stk.ControlPlane().RESTConfig())
	if err != nil {
		return s.rep, err
	}
	if err := s.watch.start(wctx, s.cs, dyn, namespace); err != nil {
		return s.rep, err
	}
	go s.statusLoop(wctx)
	s.instances = map[string]awsemu.Instance{}
	go s.pollInstances(wctx)

	full, err := s.plan(false)
	if err != nil {
		return s.rep, err
	}
	s.rep.PeakPlanPrice = full.TotalPricePerHour
	s.rep.PeakPlanNodes = len(full.NodeClaims)
	ice := cheapestOfferings(full, icedTypes)
	s.logf("simulate plans the 500 pods on %d nodes at $%.4f/h; ICE on %s", len(full.NodeClaims), full.TotalPricePerHour, describeICE(ice))

	phases := []phase{
		{name: "scale-up", weight: 14, timeout: 7 * time.Minute, run: func(ctx context.Context) error { return s.scaleUp(ctx, ice) }},
		{name: "interruptions", weight: 8, timeout: 4 * time.Minute, run: s.interruptions},
		{name: "scale-down", weight: 14, timeout: 5 * time.Minute, run: s.scaleDown},
		{name: "drift", weight: 14, timeout: 5 * time.Minute, run: s.drift},
	}
	quotas := spread(s.cfg.kills, phases)
	for i, p := range phases {
		if ctx.Err() != nil {
			break
		}
		s.runPhase(ctx, p, quotas[i])
	}
	if ctx.Err() == nil {
		s.runPhase(ctx, phase{name: "settle", timeout: 4 * time.Minute, run: s.settle}, s.cfg.kills-s.killCount())
	}
	if ctx.Err() == nil {
		// The end state once more, with the controller left alone.
		s.runPhase(ctx, phase{name: "final", timeout: 2 * time.Minute, run: s.settled}, 0)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return s.rep, nil
	}
	s.setPhase("measure")
	s.logf("phase measure: final checks")
	mctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.measure(mctx); err != nil {
		return s.rep, err
	}
	return s.rep, nil
}

func (s *soak) workDir() (string, func(), error) {
	if s.cfg.dir != "" {
		d, err := filepath.Abs(s.cfg.dir)
		return d, func() {}, err
	}
	d, err := os.MkdirTemp("", "dovetail-soak-")
	if err != nil {
		return "", nil, err
	}
	return d, func() {
		if !s.cfg.keep {
			_ = os.RemoveAll(d)
		}
	}, nil
}

// up starts the stack with examples/ and prepares the pools.
func (s *soak) up(ctx context.Context, dir string) error {
	ctrllog.SetLogger(logr.Discard())
	progress, err := os.Create(filepath.Join(dir, "stack.log"))
	if err != nil {
		return err
	}
	s.aws = localaws.New()
	s.aws.TimeScale = timeScale
	s.aws.Seed = int64(s.cfg.seed)
	s.ctrl = &ctrlproc.Component{
		Binary: s.cfg.binary, RBAC: rbac.Manifests(),
		TimeScale: func() float64 { return s.aws.TimeScale },
		Env:       map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=true"},
	}
	s.stk, err = stack.Up(ctx, stack.Options{
		Dir:        filepath.Join(dir, "stack"),
		Components: []stack.Component{s.aws, s.ctrl},
		Apply:      []string{filepath.Join(s.cfg.repo, "examples")},
		Progress:   progress,
	})
	if err != nil {
		return fmt.Errorf("starting the local stack (its log: %s): %w", progress.Name(), err)
	}
	cfg := s.stk.ControlPlane().RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	scheme, err := operator.Scheme()
	if err != nil {
		return err
	}
	if s.kube, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if s.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if s.admin, err = localaws.Admin(s.stk.Dir()); err != nil {
		return err
	}
	h, err := s.admin.Health(ctx)
	if err != nil {
		return err
	}
	s.region = h.Region
	if err := s.until(ctx, 2*time.Minute, "the example EC2NodeClass and NodePools Ready", s.examplesReady); err != nil {
		return err
	}
	if err := s.patchPools(ctx, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: budget}}
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	}); err != nil {
		return err
	}
	if err := s.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	s.logf("stack up in %s: controller log %s", time.Since(s.begin).Round(time.Second), s.ctrl.Replica(0).LogPath)
	return nil
}

func (s *soak) examplesReady(ctx context.Context) (bool, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
		return false, err
	}
	var pools karpv1.NodePoolList
	if err := s.kube.List(ctx, &pools); err != nil {
		return false, err
	}
	if !nc.IsTrue(awsv1.ConditionTypeReady) || len(nc.Status.Subnets) == 0 || len(pools.Items) == 0 {
		return false, errors.New("the EC2NodeClass is not Ready")
	}
	for _, np := range pools.Items {
		if !np.IsTrue(karpv1.ConditionTypeReady) {
			return false, fmt.Errorf("NodePool %s not Ready", np.Name)
		}
	}
	seen := map[string]bool{}
	s.zones = nil
	for _, sn := range nc.Status.Subnets {
		if !seen[sn.Zone] {
			seen[sn.Zone] = true
			s.zones = append(s.zones, sn.Zone)
		}
	}
	sort.Strings(s.zones)
	return true, nil
}

func (s *soak) patchPools(ctx context.Context, change func(*karpv1.NodePool)) error {
	var pools karpv1.NodePoolList
	if err := s.kube.List(ctx, &pools); err != nil {
		return err
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		base := np.DeepCopy()
		change(np)
		if err := s.kube.Patch(ctx, np, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("patching NodePool %s: %w", np.Name, err)
		}
	}
	return nil
}

// plan runs simulate's code path on examples/ and the workload at the
// peak or after the scale-down, for the stack's region and subnet zones.
func (s *soak) plan(down bool) (*simulate.Result, error) {
	examples, err := filepath.Glob(filepath.Join(s.cfg.repo, "examples", "*.yaml"))
	if err != nil {
		return nil, err
	}
	m := &simulate.Manifests{}
	for _, f := range examples {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := m.Read(f, data); err != nil {
			return nil, err
		}
	}
	w, err := workloadYAML(namespace, down)
	if err != nil {
		return nil, err
	}
	if err := m.Read("workload.yaml", w); err != nil {
		return nil, err
	}
	res, err := simulate.Run(m, simulate.Options{Region: s.region, Zones: s.zones, SpotToSpotConsolidation: true})
	if err != nil {
		return nil, err
	}
	if len(res.Unschedulable) > 0 {
		return nil, fmt.Errorf("simulate leaves %d pods unschedulable: %+v", len(res.Unschedulable), res.Unschedulable[0])
	}
	return res, nil
}

// cheapestOfferings are the n instance types (with their capacity type)
// the plan uses most: the cheapest offerings for the workload.
func cheapestOfferings(plan *simulate.Result, n int) []awsemu.ICERule {
	count := map[awsemu.ICERule]int{}
	for _, nc := range plan.NodeClaims {
		count[awsemu.ICERule{InstanceType: nc.InstanceType, CapacityType: nc.CapacityType}]++
	}
	rules := make([]awsemu.ICERule, 0, len(count))
	for r := range count {
		rules = append(rules, r)
	}
	sort.Slice(rules, func(i, j int) bool {
		if count[rules[i]] != count[rules[j]] {
			return count[rules[i]] > count[rules[j]]
		}
		return rules[i].InstanceType+rules[i].CapacityType < rules[j].InstanceType+rules[j].CapacityType
	})
	return rules[:min(n, len(rules))]
}

func describeICE(rules []awsemu.ICERule) string {
	var parts []string
	for _, r := range rules {
		parts = append(parts, r.InstanceType+" "+r.CapacityType)
	}
	return strings.Join(parts, ", ") + " (every zone)"
}

// spread divides the kills over the phases by weight.
func spread(kills int, phases []phase) []int {
	total := 0
	for _, p := range phases {
		total += p.weight
	}
	out := make([]int, len(phases))
	given := 0
	for i, p := range phases {
		out[i] = kills * p.weight / total
		given += out[i]
	}
	for i := 0; given < kills; i = (i + 1) % len(out) {
		out[i]++
		given++
	}
	return out
}

// runPhase runs one phase with its kills in parallel; the phase ends when
// its goal holds and its kills are done, or at its timeout (a failure).
func (s *soak) runPhase(ctx context.Context, p phase, kills int) {
	s.setPhase(p.name)
	begin := time.Now()
	s.logf("phase %s: begin (%d controller kills planned, bound %s)", p.name, kills, p.timeout)
	pctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	killed := make(chan int, 1)
	made := s.watch.snapshot().claimsCreated
	go func() { killed <- s.killLoop(pctx, ctx, p.name, kills) }()
	err := p.run(pctx)
	n := <-killed
	made = s.watch.snapshot().claimsCreated - made
	if err == nil && n < kills {
		s.logf("phase %s: %d of its %d kills made before its bound; the rest move to the settle phase", p.name, n, kills)
	}
	res := phaseResult{Name: p.name, Seconds: time.Since(begin).Seconds(), Kills: n, ClaimsMade: made}
	if err != nil {
		res.Error = err.Error()
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.rep.fail("phase %s: %v", p.name, err)
		}
		s.logf("phase %s: FAILED after %s: %v", p.name, time.Since(begin).Round(time.Second), err)
	} else {
		s.logf("phase %s: done in %s with %d kills", p.name, time.Since(begin).Round(time.Second), n)
	}
	s.rep.Phases = append(s.rep.Phases, res)
}

// killLoop SIGKILLs the controller n times at random intervals while pctx
// lasts, restarting it each time (bounded by ctx, so a restart begun
// before the phase's bound still completes). It returns the kills made.
func (s *soak) killLoop(pctx, ctx context.Context, name string, n int) int {
	done := 0
	for done < n {
		s.mu.Lock()
		wait := killMin + time.Duration(s.rng.Int64N(int64(killMax-killMin)))
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-pctx.Done():
			t.Stop()
			return done
		case <-t.C:
		}
		if err := s.ctrl.Kill(0); err != nil {
			s.rep.fail("kill during %s: %v", name, err)
			return done
		}
		done++
		s.mu.Lock()
		s.killTimes = append(s.killTimes, time.Now())
		s.kills++
		s.killsBy[name]++
		s.mu.Unlock()
		var err error
		began := time.Now()
		for attempt := 0; attempt < 3; attempt++ {
			if err = s.ctrl.Restart(ctx, 0); err == nil || ctx.Err() != nil {
				break
			}
		}
		s.mu.Lock()
		s.restarts = append(s.restarts, time.Since(began))
		s.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				s.rep.fail("restarting the controller after kill %d: %v", s.killCount(), err)
			}
			return done
		}
	}
	return done
}

func (s *soak) killCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kills
}

// until polls cond every 500 ms until it holds, ctx ends or timeout
// passes; the error then carries cond's last word.
func (s *soak) until(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// pollInstances records every instance the emulator lists, every second.
func (s *soak) pollInstances(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if ins, err := s.admin.Instances(ctx); err == nil {
			s.recordInstances(ins)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *soak) recordInstances(ins []awsemu.Instance) {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	for _, in := range ins {
		s.instances[in.ID] = in
	}
}

// statusLoop prints a status line every statusEvery.
func (s *soak) statusLoop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.statusEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		snap := s.watch.snapshot()
		live := "?"
		if ins, err := s.admin.Instances(ctx); err == nil {
			live = fmt.Sprint(len(liveInstances(ins)))
		}
		s.mu.Lock()
		name, kills := s.phaseName, s.kills
		s.mu.Unlock()
		s.logf("status %s: pods %d running, %d pending of %d; NodeClaims %d (+%d deleting, %d made); instances %s live; fleet $%.4f/h; kills %d/%d; PDB violations %d",
			name, snap.podsRunning, snap.podsPending, snap.podsTotal, snap.claims, snap.claimsDeleting, snap.claimsCreated,
			live, snap.fleetPrice, kills, s.cfg.kills, snap.violations)
	}
}

// podsRunning: every pod of the workload Running on an existing node,
// want of them, none pending.
func (s *soak) podsRunning(want int32) func(context.Context) (bool, error) {
	return func(context.Context) (bool, error) {
		snap := s.watch.snapshot()
		if snap.podsRunning != int(want) || snap.podsTotal != int(want) {
			return false, fmt.Errorf("%d of %d pods running, %d pending, %d in all", snap.podsRunning, want, snap.podsPending, snap.podsTotal)
		}
		return true, nil
	}
}

// scaleUp: 30% throttling and ICE on the cheapest offerings, then the
// workload and its PDBs; done when all 500 pods run.
func (s *soak) scaleUp(ctx context.Context, ice []awsemu.ICERule) error {
	if err := s.faults(ctx, true, ice); err != nil {
		return err
	}
	for _, a := range apps {
		if err := s.kube.Create(ctx, a.pdb(namespace, s.cfg.pdbValue)); err != nil {
			return err
		}
	}
	for _, a := range apps {
		s.watch.setReplicas(a.name, a.up)
		if err := s.kube.Create(ctx, a.deployment(namespace, a.up)); err != nil {
			return err
		}
	}
	begin := time.Now()
	if err := s.until(ctx, time.Hour, "500 pods Running", s.podsRunning(totalReplicas(false))); err != nil {
		return err
	}
	s.rep.ScaleUpSeconds = time.Since(begin).Seconds()
	snap := s.watch.snapshot()
	s.rep.PeakFleetPrice, s.rep.PeakNodes = snap.fleetPrice, snap.claims
	s.logf("500 pods Running in %s on %d NodeClaims, fleet $%.4f/h (simulate $%.4f/h without the ICE)",
		time.Since(begin).Round(time.Second), snap.claims, snap.fleetPrice, s.rep.PeakPlanPrice)
	return nil
}

// faults sets the emulator's faults: every offering equally spare (as
// test/e2e's cost comparisons do, so the spot allocation strategy picks
// the cheapest pool), 30% throttling when throttle, and the ICE rules.
func (s *soak) faults(ctx context.Context, throttle bool, ice []awsemu.ICERule) error {
	if _, err := s.admin.ClearFaults(ctx); err != nil {
		return err
	}
	if _, err := s.admin.SetCapacity(ctx, awsemu.CapacityRule{Spare: 50}); err != nil {
		return err
	}
	if throttle {
		if _, err := s.admin.SetThrottle(ctx, throttleFraction, int64(s.cfg.seed)); err != nil {
			return err
		}
	}
	for _, r := range ice {
		if _, err := s.admin.InjectICE(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// interruptions interrupts spot instances in two waves; done when their
// NodeClaims are gone and every pod runs again.
func (s *soak) interruptions(ctx context.Context) error {
	ins, err := s.admin.Instances(ctx)
	if err != nil {
		return err
	}
	var spot []awsemu.Instance
	for _, in := range liveInstances(ins) {
		if in.CapacityType == "spot" && in.State == awsemu.StateRunning {
			spot = append(spot, in)
		}
	}
	sort.Slice(spot, func(i, j int) bool { return spot[i].ID < spot[j].ID })
	s.mu.Lock()
	s.rng.Shuffle(len(spot), func(i, j int) { spot[i], spot[j] = spot[j], spot[i] })
	s.mu.Unlock()
	targets := spot[:min(s.cfg.interrupts, len(spot))]
	waves := [][]awsemu.Instance{targets[:len(targets)/2], targets[len(targets)/2:]}
	for w, wave := range waves {
		for _, in := range wave {
			s.watch.markInterrupted(in.PrivateDNSName)
			if err := s.admin.Interrupt(ctx, in.ID, awsemu.KindSpotInterruption); err != nil {
				return fmt.Errorf("interrupting %s: %w", in.ID, err)
			}
			s.logf("spot interruption of %s (%s, %s, node %s)", in.ID, in.InstanceType, in.Zone, in.PrivateDNSName)
		}
		s.rep.Interrupted += len(wave)
		if w == 0 {
			if err := sleep(ctx, 20*time.Second); err != nil {
				return err
			}
		}
	}
	gone := func(ctx context.Context) (bool, error) {
		var list karpv1.NodeClaimList
		if err := s.kube.List(ctx, &list); err != nil {
			return false, err
		}
		for _, nc := range list.Items {
			for _, in := range targets {
				if strings.HasSuffix(nc.Status.ProviderID, "/"+in.ID) {
					return false, fmt.Errorf("NodeClaim %s of interrupted %s still there", nc.Name, in.ID)
				}
			}
		}
		return s.podsRunning(totalReplicas(false))(ctx)
	}
	return s.until(ctx, time.Hour, "interrupted nodes replaced, 500 pods Running", gone)
}

// scaleDown lifts the ICE (throttling stays), turns consolidation on and
// scales the workload down; done when the pods left run and no NodeClaim
// is being deleted.
func (s *soak) scaleDown(ctx context.Context) error {
	if err := s.faults(ctx, true, nil); err != nil {
		return err
	}
	after := karpv1.MustParseNillableDuration(consolidateAfter)
	if err := s.patchPools(ctx, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = after }); err != nil {
		return err
	}
	for _, a := range apps {
		s.watch.setReplicas(a.name, a.down)
		if err := s.scale(ctx, a.name, a.down); err != nil {
			return err
		}
	}
	want := totalReplicas(true)
	return s.until(ctx, time.Hour, fmt.Sprintf("%d pods Running, no NodeClaim being deleted", want), func(ctx context.Context) (bool, error) {
		if ok, err := s.podsRunning(want)(ctx); !ok {
			return false, err
		}
		if snap := s.watch.snapshot(); snap.claimsDeleting > 0 {
			return false, fmt.Errorf("%d NodeClaims being deleted", snap.claimsDeleting)
		}
		return true, nil
	})
}

// scale sets a Deployment's replicas through its scale subresource.
func (s *soak) scale(ctx context.Context, name string, n int32) error {
	sc, err := s.cs.AppsV1().Deployments(namespace).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sc.Spec.Replicas = n
	_, err = s.cs.AppsV1().Deployments(namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{})
	return err
}

// drift publishes a newer AL2023 image; done when every NodeClaim runs a
// new image and every pod runs.
func (s *soak) drift(ctx context.Context) error {
	res, err := s.admin.PublishImage(ctx, awsemu.PublishImageRequest{Alias: "al2023@latest"})
	if err != nil {
		return err
	}
	fresh := map[string]bool{}
	for _, p := range res.Published {
		fresh[p.ImageID] = true
	}
	s.logf("published %d new AL2023 images (%s)", len(res.Published), strings.Join(sortedKeys(fresh), ", "))
	want := totalReplicas(true)
	err = s.until(ctx, time.Hour, "every NodeClaim on a new image, pods Running", func(ctx context.Context) (bool, error) {
		var list karpv1.NodeClaimList
		if err := s.kube.List(ctx, &list); err != nil {
			return false, err
		}
		old := 0
		for _, nc := range list.Items {
			if !fresh[nc.Status.ImageID] {
				old++
			}
		}
		if old > 0 {
			return false, fmt.Errorf("%d of %d NodeClaims on an old image", old, len(list.Items))
		}
		return s.podsRunning(want)(ctx)
	})
	if err != nil {
		if why := s.blocked(fresh); why != "" {
			err = fmt.Errorf("%w; why the controller kept them: %s", err, why)
		}
	}
	return err
}

// blocked gives, for the NodeClaims not on a fresh image, the last
// DisruptionBlocked event of each.
func (s *soak) blocked(fresh map[string]bool) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var list karpv1.NodeClaimList
	if err := s.kube.List(ctx, &list); err != nil {
		return ""
	}
	events, err := s.cs.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=DisruptionBlocked"})
	if err != nil {
		return ""
	}
	var out []string
	for _, nc := range list.Items {
		if fresh[nc.Status.ImageID] {
			continue
		}
		note, at := "no DisruptionBlocked event", time.Time{}
		for _, ev := range events.Items {
			if ev.Regarding.Kind == "NodeClaim" && ev.Regarding.Name == nc.Name {
				t := ev.EventTime.Time
				if ev.Series != nil {
					t = ev.Series.LastObservedTime.Time
				}
				if t.IsZero() {
					t = ev.CreationTimestamp.Time
				}
				if !t.Before(at) {
					note, at = ev.Note, t
				}
			}
		}
		out = append(out, nc.Name+": "+note)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// settle clears every fault (capacity equally spare stays) and waits for
// the end state: pods Running, no NodeClaim being deleted, instances and
// NodeClaims one to one, no empty node, the fleet within 10% of simulate.
func (s *soak) settle(ctx context.Context) error {
	if err := s.faults(ctx, false, nil); err != nil {
		return err
	}
	plan, err := s.plan(true)
	if err != nil {
		return err
	}
	s.rep.PlanPrice, s.rep.PlanNodes = plan.TotalPricePerHour, len(plan.NodeClaims)
	s.logf("simulate plans the final %d pods on %d nodes at $%.4f/h", totalReplicas(true), len(plan.NodeClaims), plan.TotalPricePerHour)
	return s.settled(ctx)
}

// settled waits for the end state (see settle).
func (s *soak) settled(ctx context.Context) error {
	want := totalReplicas(true)
	price := s.rep.PlanPrice
	if price <= 0 {
		return errors.New("no simulate plan for the final pods")
	}
	return s.until(ctx, time.Hour, "settled within 10% of simulate", func(ctx context.Context) (bool, error) {
		if ok, err := s.podsRunning(want)(ctx); !ok {
			return false, err
		}
		snap := s.watch.snapshot()
		if snap.claimsDeleting > 0 {
			return false, fmt.Errorf("%d NodeClaims being deleted", snap.claimsDeleting)
		}
		if gap := (snap.fleetPrice - price) / price; gap > costTolerance {
			return false, fmt.Errorf("fleet $%.4f/h on %d NodeClaims, simulate $%.4f/h on %d (%+.1f%%)",
				snap.fleetPrice, snap.claims, price, s.rep.PlanNodes, 100*gap)
		}
		ins, err := s.admin.Instances(ctx)
		if err != nil {
			return false, err
		}
		if live := len(liveInstances(ins)); live != snap.claims {
			return false, fmt.Errorf("%d live instances, %d NodeClaims", live, snap.claims)
		}
		return true, nil
	})
}

// measure makes the final checks from fresh lists.
func (s *soak) measure(ctx context.Context) error {
	r := s.rep
	s.mu.Lock()
	r.Kills, r.KillsByPhase = s.kills, map[string]int{}
	for _, d := range s.restarts {
		r.RestartMeanSeconds += d.Seconds() / float64(len(s.restarts))
		r.RestartMaxSeconds = max(r.RestartMaxSeconds, d.Seconds())
	}
	for k, v := range s.killsBy {
		r.KillsByPhase[k] = v
	}
	s.mu.Unlock()
	if r.Kills < s.cfg.kills {
		r.fail("%d controller kills, want %d", r.Kills, s.cfg.kills)
	}

	var pods corev1.PodList
	if err := s.kube.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return err
	}
	podsOn := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			r.PodsRunning++
			podsOn[p.Spec.NodeName]++
		} else {
			r.PodsNotRunning++
		}
	}
	r.PodsWanted = int(totalReplicas(true))
	if r.PodsRunning != r.PodsWanted || r.PodsNotRunning > 0 {
		r.fail("%d pods Running, %d not, want %d Running", r.PodsRunning, r.PodsNotRunning, r.PodsWanted)
	}

	var claims karpv1.NodeClaimList
	if err := s.kube.List(ctx, &claims); err != nil {
		return err
	}
	ins, err := s.admin.Instances(ctx)
	if err != nil {
		return err
	}
	byID := map[string]string{}
	for _, nc := range claims.Items {
		if nc.DeletionTimestamp != nil {
			r.ClaimsDeleting++
			continue
		}
		r.Nodes++
		if p, ok := nodeclaimutil.HourlyPrice(&nc); ok {
			r.FleetPrice += p
		}
		if nc.Status.ProviderID != "" {
			byID[nc.Status.ProviderID[strings.LastIndexByte(nc.Status.ProviderID, '/')+1:]] = nc.Name
		}
		if nc.Status.NodeName != "" && podsOn[nc.Status.NodeName] == 0 {
			r.EmptyNodes = append(r.EmptyNodes, nc.Name+" ("+nc.Status.NodeName+")")
		}
	}
	live := map[string]bool{}
	for _, in := range liveInstances(ins) {
		live[in.ID] = true
		r.InstancePrice += in.Price
		if _, ok := byID[in.ID]; !ok {
			r.Leaked = append(r.Leaked, fmt.Sprintf("%s (%s, %s, NodeClaim tag %q)", in.ID, in.InstanceType, in.State, in.Tags[kubenode.TagNodeClaim]))
		}
	}
	r.LiveInstances = len(live)
	for id, name := range byID {
		if !live[id] {
			r.Dangling = append(r.Dangling, fmt.Sprintf("NodeClaim %s (instance %s)", name, id))
		}
	}
	// Instances launched for one NodeClaim more than once.
	s.recordInstances(ins)
	s.instMu.Lock()
	all := make([]awsemu.Instance, 0, len(s.instances))
	for _, in := range s.instances {
		all = append(all, in)
	}
	s.instMu.Unlock()
	s.mu.Lock()
	kills := append([]time.Time(nil), s.killTimes...)
	s.mu.Unlock()
	r.Relaunches = relaunches(all, kills)
	r.InstancesLaunched = len(all)
	snap := s.watch.snapshot()
	r.Duplicates = snap.duplicates
	r.ClaimsCreated = snap.claimsCreated
	r.PDBViolations = snap.violations
	r.LostToInterruptions = snap.lostToInterrupt
	r.DrainedFromInterrupted = snap.drainedFromInterrupted
	r.LostWithoutEviction = snap.lostNoEviction
	r.ViolationDetails, r.LostDetails = s.watch.details()
	sort.Strings(r.Leaked)
	sort.Strings(r.Dangling)
	sort.Strings(r.EmptyNodes)

	if len(r.Leaked) > 0 {
		r.fail("%d leaked instances (no NodeClaim): %s", len(r.Leaked), strings.Join(r.Leaked, "; "))
	}
	if len(r.Dangling) > 0 {
		r.fail("%d NodeClaims without a live instance: %s", len(r.Dangling), strings.Join(r.Dangling, "; "))
	}
	if len(r.Duplicates) > 0 {
		r.fail("%d instances with more than one NodeClaim: %s", len(r.Duplicates), strings.Join(r.Duplicates, "; "))
	}
	if len(r.Relaunches) > 0 {
		var rs []string
		for _, rl := range r.Relaunches {
			rs = append(rs, rl.String())
		}
		r.fail("%d instances launched again for a NodeClaim that had one (launches must be idempotent): %s", len(r.Relaunches), strings.Join(rs, "; "))
	}
	if len(r.EmptyNodes) > 0 {
		r.fail("%d NodeClaims with no workload pod (surplus): %s", len(r.EmptyNodes), strings.Join(r.EmptyNodes, "; "))
	}
	if r.ClaimsDeleting > 0 {
		r.fail("%d NodeClaims still being deleted", r.ClaimsDeleting)
	}
	if r.PDBViolations > 0 {
		r.fail("%d PDB violations: %s", r.PDBViolations, strings.Join(r.ViolationDetails, "; "))
	}
	if r.PlanPrice == 0 {
		plan, err := s.plan(true)
		if err != nil {
			return err
		}
		r.PlanPrice, r.PlanNodes = plan.TotalPricePerHour, len(plan.NodeClaims)
	}
	r.CostGap = (r.FleetPrice - r.PlanPrice) / r.PlanPrice
	if math.Abs(r.CostGap) > costTolerance {
		r.fail("the fleet costs $%.4f/h on %d NodeClaims, %+.1f%% from simulate's $%.4f/h on %d (want within 10%%)",
			r.FleetPrice, r.Nodes, 100*r.CostGap, r.PlanPrice, r.PlanNodes)
	}
	r.Seconds = time.Since(s.begin).Seconds()
	r.PDBMaxUnavailable = s.cfg.pdb
	return nil
}

// liveInstances are the instances not shut down.
func liveInstances(all []awsemu.Instance) []awsemu.Instance {
	var out []awsemu.Instance
	for _, in := range all {
		switch in.State {
		case awsemu.StatePending, awsemu.StateRunning, awsemu.StateStopping, awsemu.StateStopped:
			out = append(out, in)
		}
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
