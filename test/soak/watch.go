package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Why a pod became unavailable, from its DisruptionTarget condition (set
// by the Eviction API, the pod garbage collector, ...) or what the watcher
// saw.
const (
	causeEviction    = "EvictionByEvictionAPI"
	causeNoCondition = "deleted without a DisruptionTarget condition"
	causeNodeDeleted = "its Node was deleted"
	causeNotReady    = "not Ready"
)

// podState is what the watcher keeps of a workload pod.
type podState struct {
	app, node string
	ready     bool
	deleting  bool
	// cause is the reason of the pod's DisruptionTarget condition.
	cause string
	// orphaned: its Node was deleted under it.
	orphaned bool
}

// fleetWatcher follows the workload's pods, its PodDisruptionBudgets, the
// Nodes and the NodeClaims through API watches (informers: a list, then a
// watch from its resource version, relisted when the watch ends), for the
// whole cycle. It records:
//
//   - PDB violations: a pod of an app stopped being available (Ready, not
//     being deleted, on a Node that exists) while its PDB's desiredHealthy
//     (the disruption controller's figure) was above the available pods
//     left, unless the soak itself caused it: the pod was on a node the
//     soak interrupted, or the Deployment was scaled down and the
//     ReplicaSet removed a surplus pod (deleted without a DisruptionTarget
//     condition while more pods than replicas were left);
//   - pods lost without an eviction outside interrupted nodes (reported);
//   - NodeClaims sharing one instance (duplicates) and how many were made.
type fleetWatcher struct {
	mu sync.Mutex
	// pods by name (the workload's namespace only).
	pods  map[string]*podState
	nodes map[string]bool
	// desiredHealthy by PDB name (= app name), from the PDBs' status.
	desiredHealthy map[string]int32
	// replicas by app: the Deployments' spec as the soak last set it.
	replicas map[string]int32
	// interrupted are the node names the soak interrupted.
	interrupted map[string]bool

	claims map[string]*karpv1.NodeClaim
	// claimsOfInstance are the NodeClaim names seen with each provider id.
	claimsOfInstance map[string]map[string]bool
	claimsCreated    int

	violations     []string
	violationCount int
	// Pods on interrupted nodes: evicted by the drain, or lost with the
	// instance (or its Node) before they were.
	drainedFromInterrupted int
	lostToInterrupt        int
	lostNoEviction         []string
	lostNoEvictionN        int
	scaleDownDeletes       int
	events                 int
}

func newFleetWatcher() *fleetWatcher {
	return &fleetWatcher{
		pods: map[string]*podState{}, nodes: map[string]bool{}, desiredHealthy: map[string]int32{},
		replicas: map[string]int32{}, interrupted: map[string]bool{},
		claims: map[string]*karpv1.NodeClaim{}, claimsOfInstance: map[string]map[string]bool{},
	}
}

// start runs the informers until ctx is done and returns once their
// caches are in sync.
func (w *fleetWatcher) start(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns string) error {
	nsFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	clusterFactory := informers.NewSharedInformerFactory(cs, 0)
	claimFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)

	podInf := nsFactory.Core().V1().Pods().Informer()
	pdbInf := nsFactory.Policy().V1().PodDisruptionBudgets().Informer()
	nodeInf := clusterFactory.Core().V1().Nodes().Informer()
	claimInf := claimFactory.ForResource(schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}).Informer()

	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{podInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.onPod(o, false) },
			UpdateFunc: func(_, o any) { w.onPod(o, false) },
			DeleteFunc: func(o any) { w.onPod(o, true) },
		}},
		{pdbInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    w.onPDB,
			UpdateFunc: func(_, o any) { w.onPDB(o) },
		}},
		{nodeInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.onNode(o, false) },
			UpdateFunc: func(_, o any) { w.onNode(o, false) },
			DeleteFunc: func(o any) { w.onNode(o, true) },
		}},
		{claimInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.onClaim(o, false) },
			UpdateFunc: func(_, o any) { w.onClaim(o, false) },
			DeleteFunc: func(o any) { w.onClaim(o, true) },
		}},
	}
	for _, x := range handlers {
		if _, err := x.inf.AddEventHandler(x.h); err != nil {
			return err
		}
	}
	nsFactory.Start(ctx.Done())
	clusterFactory.Start(ctx.Done())
	claimFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, pdbInf.HasSynced, nodeInf.HasSynced, claimInf.HasSynced) {
		return fmt.Errorf("the watches did not sync: %w", ctx.Err())
	}
	return nil
}

func tombstone(o any) any {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return o
}

func (w *fleetWatcher) onPod(o any, deleted bool) {
	p, ok := tombstone(o).(*corev1.Pod)
	if !ok {
		return
	}
	var next *podState
	if !deleted {
		next = &podState{app: p.Labels["app"], node: p.Spec.NodeName, deleting: p.DeletionTimestamp != nil}
		for _, c := range p.Status.Conditions {
			switch c.Type {
			case corev1.PodReady:
				next.ready = c.Status == corev1.ConditionTrue
			case corev1.DisruptionTarget:
				if c.Status == corev1.ConditionTrue {
					next.cause = c.Reason
				}
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.podChanged(p.Name, next)
}

func (w *fleetWatcher) onPDB(o any) {
	pdb, ok := tombstone(o).(*policyv1.PodDisruptionBudget)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.desiredHealthy[pdb.Name] = pdb.Status.DesiredHealthy
}

func (w *fleetWatcher) onNode(o any, deleted bool) {
	n, ok := tombstone(o).(*corev1.Node)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		w.nodeGone(n.Name)
	} else {
		w.nodes[n.Name] = true
	}
}

func (w *fleetWatcher) onClaim(o any, deleted bool) {
	u, ok := tombstone(o).(*unstructured.Unstructured)
	if !ok {
		return
	}
	nc := &karpv1.NodeClaim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claimChanged(nc, deleted)
}

// available: Ready, not being deleted, on a Node that exists (w.mu held).
func (w *fleetWatcher) available(ps *podState) bool {
	return ps != nil && ps.ready && !ps.deleting && !ps.orphaned && w.nodes[ps.node]
}

// podChanged applies one pod event; next nil means the pod is gone.
// Callers hold w.mu.
func (w *fleetWatcher) podChanged(name string, next *podState) {
	w.events++
	prev := w.pods[name]
	if next == nil {
		delete(w.pods, name)
	} else {
		w.pods[name] = next
	}
	if !w.available(prev) || w.available(next) {
		return
	}
	cause := causeNotReady
	switch {
	case next == nil || next.deleting:
		cause = causeNoCondition
		if next != nil && next.cause != "" {
			cause = next.cause
		}
	}
	w.lost(name, prev, cause)
}

// nodeGone applies a Node's deletion: its available pods are lost.
// Callers hold w.mu.
func (w *fleetWatcher) nodeGone(node string) {
	w.events++
	var onIt []string
	for name, ps := range w.pods {
		if ps.node == node && w.available(ps) {
			onIt = append(onIt, name)
		}
	}
	sort.Strings(onIt)
	// One at a time, so each is judged against the pods left before it.
	for _, name := range onIt {
		ps := w.pods[name]
		ps.orphaned = true
		w.lost(name, ps, causeNodeDeleted)
	}
	delete(w.nodes, node)
}

// lost judges a pod that just stopped being available. Callers hold w.mu.
func (w *fleetWatcher) lost(name string, ps *podState, cause string) {
	if w.interrupted[ps.node] {
		if cause == causeEviction {
			w.drainedFromInterrupted++
		} else {
			w.lostToInterrupt++
		}
		return
	}
	left, notDeleting := 0, 0
	for _, o := range w.pods {
		if o.app != ps.app {
			continue
		}
		if w.available(o) {
			left++
		}
		if !o.deleting {
			notDeleting++
		}
	}
	if cause == causeNoCondition && int32(notDeleting) >= w.replicas[ps.app] {
		// The ReplicaSet removing a surplus pod after a scale-down (the
		// pod being judged no longer counts in notDeleting).
		w.scaleDownDeletes++
		return
	}
	if cause != causeEviction {
		w.lostNoEvictionN++
		if len(w.lostNoEviction) < 20 {
			w.lostNoEviction = append(w.lostNoEviction, fmt.Sprintf("%s pod %s on %s: %s", time.Now().UTC().Format("15:04:05.000"), name, ps.node, cause))
		}
	}
	if desired := w.desiredHealthy[ps.app]; int32(left) < desired {
		w.violationCount++
		if len(w.violations) < 20 {
			w.violations = append(w.violations, fmt.Sprintf("%s pod %s on %s unavailable (%s): %d of app %s available, PDB desiredHealthy %d",
				time.Now().UTC().Format("15:04:05.000"), name, ps.node, cause, left, ps.app, desired))
		}
	}
}

// claimChanged applies one NodeClaim event. Callers hold w.mu.
func (w *fleetWatcher) claimChanged(nc *karpv1.NodeClaim, deleted bool) {
	w.events++
	if deleted {
		delete(w.claims, nc.Name)
		return
	}
	if _, seen := w.claims[nc.Name]; !seen {
		w.claimsCreated++
	}
	w.claims[nc.Name] = nc
	if id := nc.Status.ProviderID; id != "" {
		if w.claimsOfInstance[id] == nil {
			w.claimsOfInstance[id] = map[string]bool{}
		}
		w.claimsOfInstance[id][nc.Name] = true
	}
}

// setReplicas records the replicas the soak set for an app.
func (w *fleetWatcher) setReplicas(app string, n int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replicas[app] = n
}

// markInterrupted records a node the soak is about to interrupt.
func (w *fleetWatcher) markInterrupted(node string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.interrupted[node] = true
}

// snapshot is the watcher's figures at one moment.
type snapshot struct {
	podsRunning, podsPending, podsTotal int
	claims, claimsDeleting              int
	fleetPrice                          float64
	claimsCreated                       int
	violations                          int
	lostToInterrupt                     int
	drainedFromInterrupted              int
	lostNoEviction                      int
	scaleDownDeletes                    int
	duplicates                          []string
}

func (w *fleetWatcher) snapshot() snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := snapshot{claimsCreated: w.claimsCreated, violations: w.violationCount, lostToInterrupt: w.lostToInterrupt, drainedFromInterrupted: w.drainedFromInterrupted,
		lostNoEviction: w.lostNoEvictionN, scaleDownDeletes: w.scaleDownDeletes}
	for _, ps := range w.pods {
		if ps.deleting {
			continue
		}
		s.podsTotal++
		switch {
		case w.available(ps):
			s.podsRunning++
		case ps.node == "":
			s.podsPending++
		}
	}
	for _, nc := range w.claims {
		if nc.DeletionTimestamp != nil {
			s.claimsDeleting++
			continue
		}
		s.claims++
		if p, ok := nodeclaimutil.HourlyPrice(nc); ok {
			s.fleetPrice += p
		}
	}
	for id, names := range w.claimsOfInstance {
		if len(names) > 1 {
			s.duplicates = append(s.duplicates, fmt.Sprintf("instance %s has NodeClaims %v", id, sortedKeys(names)))
		}
	}
	sort.Strings(s.duplicates)
	return s
}

func (w *fleetWatcher) details() (violations, lostNoEviction []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...), append([]string(nil), w.lostNoEviction...)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
