package oracle_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/test/oracle"
)

const (
	region = "us-east-1"
	// defaultWorkloads is how many seeded workloads TestOracle runs.
	defaultWorkloads = 200
	// workers run that many workloads at once.
	workers = 8
	// bindTimeout bounds the wait for the scheduler to bind a workload.
	bindTimeout = 60 * time.Second
)

// TestOracle plans generated workloads with the engine and has the real
// kube-scheduler judge every placement (see the package documentation for
// the method and why it is sound).
func TestOracle(t *testing.T) {
	n := defaultWorkloads
	if s := os.Getenv("ORACLE_WORKLOADS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("ORACLE_WORKLOADS=%q: want a positive integer", s)
		}
		n = v
	}
	first := uint64(1)
	if s := os.Getenv("ORACLE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ORACLE_SEED=%q: %v", s, err)
		}
		first = v
	}
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, z := range catalog.Builtin().DefaultZones(region) {
		zones = append(zones, z.Name)
	}
	h := &harness{cs: cs, src: snapshot.NewCatalogSource(catalog.Builtin(), region, zones), zones: zones}
	if err := h.watch(t.Context()); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	jobs := make(chan uint64)
	var mu sync.Mutex
	var failures []string
	features := map[string]int{}
	pods, nodes, onExisting := 0, 0, 0
	var solve time.Duration
	var phases [4]time.Duration
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range jobs {
				w := oracle.Generate(fmt.Sprintf("w%03d", seed), seed, zones)
				st, err := h.run(t.Context(), w)
				mu.Lock()
				if err != nil {
					failures = append(failures, fmt.Sprintf("workload %s (seed %d, features %v; rerun alone with ORACLE_SEED=%d ORACLE_WORKLOADS=1):\n%v",
						w.ID, seed, w.Features, seed, err))
				}
				for _, f := range w.Features {
					features[f]++
				}
				pods += st.pods
				onExisting += st.onExisting
				nodes += st.nodes
				solve += st.solve
				for i := range phases {
					phases[i] += st.phases[i]
				}
				done := pods
				mu.Unlock()
				_ = done
			}
		}()
	}
	progress := time.NewTicker(15 * time.Second)
	defer progress.Stop()
	for i := range uint64(n) {
		select {
		case jobs <- first + i:
		case <-progress.C:
			mu.Lock()
			t.Logf("oracle: %d/%d workloads dispatched, %d pods bound so far, %v", i, n, pods, time.Since(start).Round(time.Second))
			mu.Unlock()
			jobs <- first + i
		}
	}
	close(jobs)
	wg.Wait()
	h.cleaning.Wait()

	keys := make([]string, 0, len(features))
	for f := range features {
		keys = append(keys, f)
	}
	sort.Strings(keys)
	var cov []string
	for _, f := range keys {
		cov = append(cov, fmt.Sprintf("%s=%d", f, features[f]))
	}
	t.Logf("oracle: %d workloads, %d pods (%d of them on existing nodes or in-flight NodeClaims) on %d planned nodes, engine time %v, wall time %v",
		n, pods, onExisting, nodes, solve.Round(time.Millisecond), time.Since(start).Round(time.Second))
	var ph []string
	for i, d := range phases {
		ph = append(ph, fmt.Sprintf("%s %v", phaseNames[i], (d/time.Duration(n)).Round(time.Millisecond)))
	}
	t.Logf("oracle: mean time per workload: engine %v, %s", (solve / time.Duration(n)).Round(time.Millisecond), strings.Join(ph, ", "))
	if evs, err := cs.CoreV1().Events("").List(t.Context(), metav1.ListOptions{FieldSelector: "reason=FailedScheduling"}); err == nil {
		retried := map[string]bool{}
		for _, e := range evs.Items {
			retried[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name] = true
		}
		t.Logf("oracle: %d pods needed more than one scheduling attempt", len(retried))
	}
	t.Logf("oracle: feature coverage (workloads using each): %s", strings.Join(cov, " "))
	if len(failures) > 0 {
		sort.Strings(failures)
		t.Errorf("%d of %d workloads disagree:\n%s", len(failures), n, strings.Join(failures, "\n\n"))
	}
	// Every generated constraint must actually have been exercised.
	for _, f := range []string{"anti-affinity-hostname", "anti-affinity-zone", "affinity-zone", "spread-zone", "spread-hostname",
		"spread-capacity-type", "spread-minDomains", "spread-schedule-anyway", "spread-nodeAffinityPolicy-Ignore", "host-port",
		"pvc-zone", "team-pool", "toleration+team-selector", "weighted-pools", "daemonset", "arch-selector", "required-node-affinity-zone",
		"preferred-node-affinity", "preferred-anti-affinity", "existing-nodes", "in-flight-nodeclaim"} {
		if n >= defaultWorkloads && features[f] == 0 {
			t.Errorf("no workload exercised %s", f)
		}
	}
}

type harness struct {
	cs    kubernetes.Interface
	src   snapshot.InstanceTypeSource
	zones []string
	// pods and nodes are watched once for every worker; changed is closed
	// and replaced on every event, so waiters re-check their condition only
	// when something happened.
	pods, nodes cache.Indexer
	mu          sync.Mutex
	changed     chan struct{}
	cleaning    sync.WaitGroup
}

// watch starts the shared pod and node informers.
func (h *harness) watch(ctx context.Context) error {
	h.changed = make(chan struct{})
	factory := informers.NewSharedInformerFactory(h.cs, 0)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.notify() },
		UpdateFunc: func(any, any) { h.notify() },
		DeleteFunc: func(any) { h.notify() },
	}
	podInf := factory.Core().V1().Pods().Informer()
	nodeInf := factory.Core().V1().Nodes().Informer()
	if _, err := podInf.AddEventHandler(notify); err != nil {
		return err
	}
	if _, err := nodeInf.AddEventHandler(notify); err != nil {
		return err
	}
	h.pods, h.nodes = podInf.GetIndexer(), nodeInf.GetIndexer()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	return nil
}

func (h *harness) notify() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// waitFor calls check after every watch event until it reports done, fails,
// or the deadline passes (then it returns the last check's error, or
// errTimeout).
func (h *harness) waitFor(ctx context.Context, timeout time.Duration, check func() (bool, error)) error {
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ch:
		case <-deadline:
			return errTimeout
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

var errTimeout = errors.New("timed out")

type stats struct {
	pods, nodes, onExisting int
	solve                   time.Duration
	// phases: create objects, nodes seen, daemon pods bound, pods bound.
	phases [4]time.Duration
}

var phaseNames = [4]string{"create", "nodes-seen", "daemons-bound", "pods-bound"}

// run plans one workload and checks the plan against the scheduler. It
// always cleans up what it created.
func (h *harness) run(ctx context.Context, w *oracle.Workload) (stats, error) {
	var st stats
	existing, err := h.existing(w)
	if err != nil {
		return st, err
	}
	in, err := snapshot.Build(&snapshot.Cluster{
		NodePools: w.NodePools, NodeClasses: []*awsv1.EC2NodeClass{w.NodeClass}, Pods: append(slices.Clone(w.Pods), w.Bound...), DaemonSets: w.DaemonSets,
		Nodes: existing.nodes, NodeClaims: existing.claims,
		PersistentVolumeClaims: w.Claims, PersistentVolumes: w.Volumes,
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: w.Namespace}}},
	}, h.src, snapshot.Options{Region: region, Engine: engine.Options{SkipLowerBound: true}})
	if err != nil {
		return st, fmt.Errorf("snapshot: %w", err)
	}
	t0 := time.Now()
	plan, err := engine.Solve(in)
	st.solve = time.Since(t0)
	if err != nil {
		return st, fmt.Errorf("engine: %w", err)
	}
	if len(plan.Unschedulable) > 0 {
		var msgs []string
		for _, u := range plan.Unschedulable {
			msgs = append(msgs, fmt.Sprintf("  %s: %s: %s", u.Pod, u.Code, u.Message))
		}
		return st, fmt.Errorf("the workload is feasible by construction, but the engine left %d pods unschedulable:\n%s", len(plan.Unschedulable), strings.Join(msgs, "\n"))
	}
	planned := map[string]string{} // pod name -> node
	for _, pl := range plan.Existing {
		if _, ok := existing.real[pl.Node]; !ok {
			return st, fmt.Errorf("pod %s placed on %s, which is neither an existing node nor an in-flight NodeClaim", pl.Pod, pl.Node)
		}
		planned[pl.Pod.Name] = pl.Node
		st.onExisting++
	}
	for _, nc := range plan.NodeClaims {
		for _, p := range nc.Pods {
			if prev, dup := planned[p.Name]; dup {
				return st, fmt.Errorf("pod %s planned twice (%s and %s)", p, prev, nc.Name)
			}
			planned[p.Name] = nc.Name
		}
	}
	if len(planned) != len(w.Pods) {
		return st, fmt.Errorf("plan holds %d pods, the workload has %d", len(planned), len(w.Pods))
	}
	st.pods, st.nodes = len(w.Pods), len(plan.NodeClaims)

	err = h.apply(ctx, w, in, plan, planned, existing, &st)
	h.cleaning.Add(1)
	go func() {
		defer h.cleaning.Done()
		h.cleanup(w)
	}()
	return st, err
}

// existingNodes are a workload's running nodes and in-flight NodeClaims as
// the engine sees them, and the real Nodes the oracle creates for them.
type existingNodes struct {
	nodes  []*corev1.Node
	claims []*karpv1.NodeClaim
	// real maps the name of each to its Node (pin taint included);
	// inFlight marks the in-flight ones (they get daemonset pods).
	real     map[string]*corev1.Node
	inFlight map[string]bool
}

// existing builds the workload's running nodes and in-flight NodeClaims of
// its general pool: on-demand, with the instance type's labels, capacity
// and allocatable (under the node class's kubelet settings) and the pool's
// template labels. An in-flight NodeClaim names exactly one instance type,
// zone and capacity type, so the node it becomes is known.
func (h *harness) existing(w *oracle.Workload) (*existingNodes, error) {
	out := &existingNodes{real: map[string]*corev1.Node{}, inFlight: map[string]bool{}}
	if len(w.Existing) == 0 {
		return out, nil
	}
	var pool *karpv1.NodePool
	for _, np := range w.NodePools {
		if np.Name == w.GeneralPool() {
			pool = np
		}
	}
	types, err := h.src.InstanceTypes(pool, w.NodeClass)
	if err != nil {
		return nil, err
	}
	for _, spec := range w.Existing {
		i := slices.IndexFunc(types, func(it *cloudprovider.InstanceType) bool { return it.Name == spec.InstanceType })
		if i < 0 {
			return nil, fmt.Errorf("existing node %s: the catalog has no %s", spec.Name, spec.InstanceType)
		}
		it := types[i]
		var offering *cloudprovider.Offering
		for j := range it.Offerings {
			if o := &it.Offerings[j]; o.Zone == spec.Zone && o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				offering = o
			}
		}
		if offering == nil {
			return nil, fmt.Errorf("existing node %s: %s is not sold on demand in %s", spec.Name, it.Name, spec.Zone)
		}
		labels := maps.Clone(it.Labels)
		maps.Copy(labels, pool.Spec.Template.Labels)
		labels[corev1.LabelInstanceTypeStable] = it.Name
		labels[corev1.LabelTopologyZone] = spec.Zone
		labels[corev1.LabelTopologyRegion] = region
		labels[karpv1.CapacityTypeLabelKey] = cloudprovider.CapacityTypeOnDemand
		labels[karpv1.NodePoolLabelKey] = pool.Name
		labels[corev1.LabelHostname] = spec.Name
		if offering.ZoneID != "" {
			labels[awsv1.LabelTopologyZoneID] = offering.ZoneID
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels},
			Spec:       corev1.NodeSpec{ProviderID: "oracle://" + spec.Name},
			Status:     corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable()},
		}
		real := n.DeepCopy()
		real.Labels[oracle.LabelNode] = spec.Name
		real.Spec.Taints = append(real.Spec.Taints, corev1.Taint{Key: w.PinTaintKey(), Value: spec.Name, Effect: corev1.TaintEffectNoSchedule})
		out.real[spec.Name] = real
		if !spec.InFlight {
			out.nodes = append(out.nodes, n)
			continue
		}
		out.inFlight[spec.Name] = true
		reqs := []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{it.Name}},
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{spec.Zone}},
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{cloudprovider.CapacityTypeOnDemand}},
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.Name}},
		}
		for _, k := range slices.Sorted(maps.Keys(pool.Spec.Template.Labels)) {
			reqs = append(reqs, karpv1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.Spec.Template.Labels[k]}})
		}
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool.Name}}}
		nc.Spec.Requirements = reqs
		nc.Spec.NodeClassRef = pool.Spec.Template.Spec.NodeClassRef
		out.claims = append(out.claims, nc)
	}
	return out, nil
}

// types indexes the instance types the snapshot gave each pool.
func typeOf(in *engine.Input, pool, name string) *cloudprovider.InstanceType {
	for _, np := range in.NodePools {
		if np.Name != pool {
			continue
		}
		for _, it := range np.InstanceTypes {
			if it.Name == name {
				return it
			}
		}
	}
	return nil
}

// node builds the Node a NodeClaim becomes: the plan's labels, the launched
// offering's instance type labels, zone, zone id, capacity type and region,
// the pool's taints plus the workload's pin taint, and the type's capacity
// and allocatable. Startup taints are left out: a node agent removes them
// before pods are scheduled.
func node(w *oracle.Workload, in *engine.Input, nc engine.NewNodeClaim) (*corev1.Node, error) {
	it := typeOf(in, nc.NodePool, nc.Offering.InstanceType)
	if it == nil {
		return nil, fmt.Errorf("claim %s: instance type %q is not among pool %s's types", nc.Name, nc.Offering.InstanceType, nc.NodePool)
	}
	labels := map[string]string{}
	for k, v := range it.Labels {
		labels[k] = v
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	labels[corev1.LabelInstanceTypeStable] = it.Name
	labels[corev1.LabelTopologyZone] = nc.Offering.Zone
	labels[corev1.LabelTopologyRegion] = region
	labels[karpv1.CapacityTypeLabelKey] = nc.Offering.CapacityType
	labels[karpv1.NodePoolLabelKey] = nc.NodePool
	labels[corev1.LabelHostname] = nc.Name
	labels[oracle.LabelNode] = nc.Name
	for _, o := range it.Offerings {
		if o.Zone == nc.Offering.Zone && o.ZoneID != "" {
			labels[awsv1.LabelTopologyZoneID] = o.ZoneID
		}
	}
	taints := append(slices.Clone(nc.Taints), corev1.Taint{Key: w.PinTaintKey(), Value: nc.Name, Effect: corev1.TaintEffectNoSchedule})
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints, ProviderID: "oracle://" + nc.Name},
		Status:     corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable()},
	}
	return n, nil
}

// pinned returns the pod as the oracle submits it: bound to its planned
// node by the pin-taint toleration, or, for pods whose spread constraints
// ignore node affinity, by a nodeSelector on the node's own label.
func pinned(w *oracle.Workload, p *corev1.Pod, nodeName string) *corev1.Pod {
	q := p.DeepCopy()
	ignore := slices.ContainsFunc(q.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.NodeAffinityPolicy != nil && *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore
	})
	if ignore {
		q.Spec.NodeSelector[oracle.LabelNode] = nodeName
	} else {
		q.Spec.Tolerations = append(q.Spec.Tolerations, corev1.Toleration{Key: w.PinTaintKey(), Operator: corev1.TolerationOpEqual, Value: nodeName, Effect: corev1.TaintEffectNoSchedule})
	}
	q.Annotations = map[string]string{"oracle.dovetail.sh/planned-node": nodeName}
	return q
}

// daemonRunsOn says whether a DaemonSet's pod goes on a node: its node
// selector and required node affinity match, and it tolerates the node's
// NoSchedule/NoExecute taints other than the oracle's pin taint.
func daemonRunsOn(w *oracle.Workload, spec *corev1.PodSpec, n *corev1.Node) bool {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: *spec}).Match(n); !ok {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Key != w.PinTaintKey() && (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
	}, true)
	return !untolerated
}

func (h *harness) apply(ctx context.Context, w *oracle.Workload, in *engine.Input, plan *engine.Plan, planned map[string]string, existing *existingNodes, st *stats) error {
	cs := h.cs
	mark := time.Now()
	phase := func(i int) { st.phases[i] += time.Since(mark); mark = time.Now() }
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace: %w", err)
	}
	for _, pv := range w.Volumes {
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pv %s: %w", pv.Name, err)
		}
	}
	for _, pvc := range w.Claims {
		if _, err := cs.CoreV1().PersistentVolumeClaims(w.Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pvc %s: %w", pvc.Name, err)
		}
	}
	nodes := make([]*corev1.Node, len(plan.NodeClaims))
	for i, nc := range plan.NodeClaims {
		n, err := node(w, in, nc)
		if err != nil {
			return err
		}
		nodes[i] = n
	}
	// The existing nodes and in-flight NodeClaims become nodes too.
	for _, spec := range w.Existing {
		nodes = append(nodes, existing.real[spec.Name])
	}
	// Create the nodes in parallel. The API server's TaintNodesByCondition
	// admission adds node.kubernetes.io/not-ready on creation; the node
	// lifecycle controller would lift it once kwok reports the node Ready.
	// Put the planned taints back instead (a registered, initialized node).
	var eg errgroup.Group
	for _, n := range nodes {
		eg.Go(func() error {
			if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": n.Spec.Taints}})
			if err != nil {
				return err
			}
			if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("node %s taints: %w", n.Name, err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	phase(0)
	if err := h.waitSeen(ctx, nodes); err != nil {
		return err
	}
	phase(1)
	// The running pods, bound by name as the kubelet found them.
	want := map[string]string{}
	for _, p := range w.Bound {
		if _, err := cs.CoreV1().Pods(w.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("running pod %s: %w", p.Name, err)
		}
		want[p.Name] = p.Spec.NodeName
	}
	// Daemonset pods on the new and in-flight nodes (the engine counts them
	// there; the existing nodes' daemon pods would be among their running
	// pods), pinned the way the DaemonSet controller pins them (required
	// node affinity on metadata.name), created in parallel.
	var daemons []*corev1.Pod
	for _, n := range nodes {
		if _, ok := existing.real[n.Name]; ok && !existing.inFlight[n.Name] {
			continue
		}
		for _, ds := range w.DaemonSets {
			spec := ds.Spec.Template.Spec.DeepCopy()
			if !daemonRunsOn(w, spec, n) {
				continue
			}
			spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: w.PinTaintKey(), Operator: corev1.TolerationOpExists})
			spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}}}}}}}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + n.Name, Namespace: w.Namespace, Labels: ds.Spec.Template.Labels}, Spec: *spec}
			daemons = append(daemons, p)
			want[p.Name] = n.Name
		}
	}
	eg = errgroup.Group{}
	eg.SetLimit(8)
	for _, p := range daemons {
		eg.Go(func() error {
			if _, err := cs.CoreV1().Pods(w.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("daemon pod %s: %w", p.Name, err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	if err := h.waitBound(ctx, w, want, "daemonset pods"); err != nil {
		return err
	}
	phase(2)
	// Then the pending pods, in an order the scheduler can follow (see
	// bindOrder), starting from plan order interleaved across NodeClaims
	// (the n-th pod of every claim before the n+1-th).
	var base []string
	for _, pl := range plan.Existing {
		base = append(base, pl.Pod.Name)
	}
	for round := 0; ; round++ {
		added := false
		for _, nc := range plan.NodeClaims {
			if round < len(nc.Pods) {
				base = append(base, nc.Pods[round].Name)
				added = true
			}
		}
		if !added {
			break
		}
	}
	pinnedPods := map[string]*corev1.Pod{}
	for _, p := range w.Pods {
		pinnedPods[p.Name] = pinned(w, p, planned[p.Name])
	}
	running := map[string]bool{}
	for _, p := range w.Bound {
		pinnedPods[p.Name] = p
		planned[p.Name] = p.Spec.NodeName
		running[p.Name] = true
	}
	nodeByName := map[string]*corev1.Node{}
	for _, n := range nodes {
		nodeByName[n.Name] = n
	}
	order, stuck := bindOrder(pinnedPods, planned, nodeByName, running, base)
	for _, name := range order {
		if _, err := cs.CoreV1().Pods(w.Namespace).Create(ctx, pinnedPods[name], metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		want[name] = planned[name]
	}
	defer phase(3)
	if err := h.waitBound(ctx, w, want, "pods"); err != nil {
		if stuck > 0 {
			return fmt.Errorf("%w\n(the oracle found no order in which every pod is placeable when it comes: %d pods were submitted out of turn)", err, stuck)
		}
		return err
	}
	return nil
}

// waitSeen waits until the watch shows every node with its planned
// taints: the scheduler's informer sees the same stream, so by then the
// first scheduling attempt of a pod is unlikely to fail on a node it does
// not know yet (which would cost it a backoff). kwok marks the nodes Ready
// meanwhile; the scheduler does not wait for that.
func (h *harness) waitSeen(ctx context.Context, nodes []*corev1.Node) error {
	var missing string
	err := h.waitFor(ctx, bindTimeout, func() (bool, error) {
		for _, n := range nodes {
			obj, ok, _ := h.nodes.GetByKey(n.Name)
			if !ok || len(obj.(*corev1.Node).Spec.Taints) != len(n.Spec.Taints) {
				missing = n.Name
				return false, nil
			}
		}
		return true, nil
	})
	if errors.Is(err, errTimeout) {
		return fmt.Errorf("node %s not seen with its taints within %v", missing, bindTimeout)
	}
	return err
}

// waitBound waits until every pod in want is bound, failing fast when one
// is bound to another node, and reports the scheduler's FailedScheduling
// events for the pods still pending at the deadline.
func (h *harness) waitBound(ctx context.Context, w *oracle.Workload, want map[string]string, what string) error {
	var pending []string
	err := h.waitFor(ctx, bindTimeout, func() (bool, error) {
		pending = pending[:0]
		for name, node := range want {
			obj, ok, _ := h.pods.GetByKey(w.Namespace + "/" + name)
			got := ""
			if ok {
				got = obj.(*corev1.Pod).Spec.NodeName
			}
			switch got {
			case "":
				pending = append(pending, name)
			case node:
			default:
				return false, fmt.Errorf("pod %s was bound to %s, planned %s", name, got, node)
			}
		}
		return len(pending) == 0, nil
	})
	if errors.Is(err, errTimeout) {
		sort.Strings(pending)
		return fmt.Errorf("the scheduler did not bind %d %s to their planned nodes within %v: %s\n%s",
			len(pending), what, bindTimeout, strings.Join(pending, " "), h.events(ctx, w, pending, want))
	}
	return err
}

func (h *harness) events(ctx context.Context, w *oracle.Workload, pods []string, want map[string]string) string {
	var b strings.Builder
	for _, name := range pods {
		evs, err := h.cs.CoreV1().Events(w.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.name", name), fields.OneTermEqualSelector("reason", "FailedScheduling")).String()})
		if err != nil {
			fmt.Fprintf(&b, "  %s (planned %s): listing events: %v\n", name, want[name], err)
			continue
		}
		msg := "no FailedScheduling event"
		if len(evs.Items) > 0 {
			msg = evs.Items[len(evs.Items)-1].Message
		}
		fmt.Fprintf(&b, "  %s (planned %s): %s\n", name, want[name], msg)
	}
	return b.String()
}

// cleanup deletes the workload's nodes, so that the scheduler and kwok
// keep working on a small cluster. Its pods, claims and volumes stay: they
// live in the workload's own namespace (or carry its name) and concern no
// other workload.
func (h *harness) cleanup(w *oracle.Workload) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	err := h.cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
		metav1.ListOptions{LabelSelector: oracle.LabelWorkload + "=" + w.ID})
	if err != nil {
		fmt.Fprintf(os.Stderr, "oracle: deleting the nodes of %s: %v\n", w.ID, err)
	}
}
