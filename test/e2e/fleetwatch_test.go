package e2e_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// fleetWatch follows Nodes and NodeClaims through API watches (every
// change is seen, not a sample of them) and records, for one NodePool,
// the moments the disruption tests assert on: how many of the pool's
// nodes were disrupting (tainted karpenter.sh/disrupted or being deleted)
// against the budget's bound, and when each NodeClaim was created and
// went away.
type fleetWatch struct {
	pool    string
	percent int // the pool's budget in percent; 0 means not checked

	mu     sync.Mutex
	claims map[string]*karpv1.NodeClaim
	nodes  map[string]*corev1.Node
	// born and died are when each NodeClaim (by name) appeared and was
	// removed from the API (the watch's clock).
	born, died map[string]time.Time
	// maxDisrupting is the most disrupting nodes seen at once; violations
	// are the moments above the bound.
	maxDisrupting int
	violations    []string
	// counts is the pool's live (not deleting) NodeClaim count after each
	// change.
	counts []int
	// replacement: the NodeClaim (by name) carried a disruption command's
	// label when first seen; disruptedNodes are the nodes (any pool) seen
	// tainted karpenter.sh/disrupted or being deleted.
	replacement    map[string]bool
	disruptedNodes map[string]bool

	cancel context.CancelFunc
	done   chan struct{}
}

// watchFleet starts a fleetWatch for pool (percent is its budget, 0 for
// no bound check); stop it with stop.
func watchFleet(t testing.TB, pool string, percent int) *fleetWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &fleetWatch{pool: pool, percent: percent,
		claims: map[string]*karpv1.NodeClaim{}, nodes: map[string]*corev1.Node{},
		born: map[string]time.Time{}, died: map[string]time.Time{},
		replacement: map[string]bool{}, disruptedNodes: map[string]bool{},
		cancel: cancel, done: make(chan struct{})}
	ready := make(chan error, 1)
	go w.run(ctx, ready)
	if err := <-ready; err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	return w
}

func (w *fleetWatch) stop() {
	w.cancel()
	<-w.done
}

// run lists, then watches from the list's resource version; a closed
// watch (the API server ends them now and then) starts over with a fresh
// list, whose differences are applied as changes.
func (w *fleetWatch) run(ctx context.Context, ready chan<- error) {
	defer close(w.done)
	first := true
	for ctx.Err() == nil {
		var ncs karpv1.NodeClaimList
		var ns corev1.NodeList
		err := watchClient.List(ctx, &ncs)
		if err == nil {
			err = watchClient.List(ctx, &ns)
		}
		var wc, wn watch.Interface
		if err == nil {
			wc, err = watchClient.Watch(ctx, &karpv1.NodeClaimList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: ncs.ResourceVersion}})
		}
		if err == nil {
			wn, err = watchClient.Watch(ctx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: ns.ResourceVersion}})
			if err != nil {
				wc.Stop()
			}
		}
		if first {
			ready <- err
			first = false
			if err != nil {
				return
			}
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		w.resync(ncs.Items, ns.Items)
		w.follow(ctx, wc, wn)
		wc.Stop()
		wn.Stop()
	}
}

func (w *fleetWatch) resync(ncs []karpv1.NodeClaim, ns []corev1.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	seen := map[string]bool{}
	for i := range ncs {
		nc := &ncs[i]
		seen[nc.Name] = true
		if _, ok := w.born[nc.Name]; !ok {
			w.born[nc.Name] = now
			w.replacement[nc.Name] = nc.Labels[disruptionCommandLabel] != ""
		}
		w.claims[nc.Name] = nc
	}
	for name := range w.claims {
		if !seen[name] {
			delete(w.claims, name)
			w.died[name] = now
		}
	}
	w.nodes = map[string]*corev1.Node{}
	for i := range ns {
		w.nodes[ns[i].Name] = &ns[i]
	}
	w.observe()
}

func (w *fleetWatch) follow(ctx context.Context, wc, wn watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wc.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			nc, ok := ev.Object.(*karpv1.NodeClaim)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.claims, nc.Name)
				w.died[nc.Name] = time.Now()
			} else {
				if _, ok := w.born[nc.Name]; !ok {
					w.born[nc.Name] = time.Now()
					w.replacement[nc.Name] = nc.Labels[disruptionCommandLabel] != ""
				}
				w.claims[nc.Name] = nc
			}
			w.observe()
			w.mu.Unlock()
		case ev, ok := <-wn.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.nodes, n.Name)
			} else {
				w.nodes[n.Name] = n
			}
			w.observe()
			w.mu.Unlock()
		}
	}
}

// disruptionCommandLabel marks a disruption command's replacement
// NodeClaims (the controller's CommandLabelKey).
const disruptionCommandLabel = "dovetail.sh/disruption-command"

// observe records the current moment (w.mu held).
func (w *fleetWatch) observe() {
	for name, n := range w.nodes {
		if n.DeletionTimestamp != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
			w.disruptedNodes[name] = true
		}
	}
	initialized, disrupting, live := 0, 0, 0
	for _, nc := range w.claims {
		if nc.Labels[karpv1.NodePoolLabelKey] != w.pool {
			continue
		}
		if nc.DeletionTimestamp == nil {
			live++
		}
		if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			continue
		}
		initialized++
		if isDisrupting(nc, w.nodes[nc.Status.NodeName]) {
			disrupting++
		}
	}
	w.counts = append(w.counts, live)
	w.maxDisrupting = max(w.maxDisrupting, disrupting)
	if w.percent > 0 {
		bound := int(math.Ceil(float64(w.percent) * float64(initialized) / 100))
		if disrupting > bound && len(w.violations) < 20 {
			w.violations = append(w.violations, fmt.Sprintf("%s: %d of %d initialized nodes disrupting (bound %d)",
				time.Now().Format("15:04:05.000"), disrupting, initialized, bound))
		}
	}
}

// isDisrupting: the NodeClaim or its Node is being deleted, or the Node
// carries the disrupted taint.
func isDisrupting(nc *karpv1.NodeClaim, n *corev1.Node) bool {
	if nc.DeletionTimestamp != nil {
		return true
	}
	if n == nil {
		return false
	}
	if n.DeletionTimestamp != nil {
		return true
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

// churned are the NodeClaims of any pool that were created after since
// and removed again within window of their creation.
func (w *fleetWatch) churned(since time.Time, window time.Duration) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, b := range w.born {
		d, ok := w.died[name]
		if ok && b.After(since) && d.Sub(b) < window {
			out = append(out, fmt.Sprintf("%s (lived %s)", name, d.Sub(b).Round(time.Second)))
		}
	}
	return out
}

// createdSince are the NodeClaims (any pool) first seen after since.
func (w *fleetWatch) createdSince(since time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, b := range w.born {
		if b.After(since) {
			out = append(out, name)
		}
	}
	return out
}

// createdBeyondReplacements are the NodeClaims first seen after since
// that no disruption command launched (provisioning's).
func (w *fleetWatch) createdBeyondReplacements(since time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, b := range w.born {
		if b.After(since) && !w.replacement[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// nodeDisrupted reports whether the node was ever seen tainted
// karpenter.sh/disrupted or being deleted.
func (w *fleetWatch) nodeDisrupted(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.disruptedNodes[name]
}

func (w *fleetWatch) result() (maxDisrupting int, violations []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxDisrupting, append([]string(nil), w.violations...)
}

// logKeptReasons logs, per node, the last reason the disruption controller
// gave for keeping it (for failures).
func logKeptReasons(t *testing.T) {
	var list eventsv1.EventList
	if err := kube.List(context.Background(), &list); err != nil {
		return
	}
	last := map[string]eventsv1.Event{}
	for _, ev := range list.Items {
		if ev.ReportingController != "dovetail" || ev.Regarding.Kind != "Node" ||
			(ev.Reason != "Unconsolidatable" && ev.Reason != "DisruptionBlocked") {
			continue
		}
		if prev, ok := last[ev.Regarding.Name]; !ok || ev.CreationTimestamp.After(prev.CreationTimestamp.Time) {
			last[ev.Regarding.Name] = ev
		}
	}
	for _, n := range managedNodes(t) {
		if ev, ok := last[n.Name]; ok {
			t.Logf("kept %s (%s): %s: %s", n.Name, n.Labels[corev1.LabelInstanceTypeStable], ev.Reason, ev.Note)
		} else {
			t.Logf("kept %s (%s): no event", n.Name, n.Labels[corev1.LabelInstanceTypeStable])
		}
	}
}

// podWatch follows a namespace's pods through an API watch (relisting
// when a watch ends) and records, at every change, how many pods matching
// the PDB's selector are available (Ready and not being deleted), the
// fewest seen, and every pod carrying karpenter.sh/do-not-disrupt that
// started terminating or went away.
type podWatch struct {
	ns       string
	selector map[string]string

	mu           sync.Mutex
	pods         map[string]*corev1.Pod
	minAvailable int // -1 until the first list
	minAt        string
	disturbed    map[string]string // do-not-disrupt pod -> what happened

	cancel context.CancelFunc
	done   chan struct{}
}

func watchPods(t testing.TB, ns string, selector map[string]string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{ns: ns, selector: selector, pods: map[string]*corev1.Pod{}, minAvailable: -1,
		disturbed: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(w.done)
		first := true
		for ctx.Err() == nil {
			var list corev1.PodList
			err := watchClient.List(ctx, &list, client.InNamespace(ns))
			var wi watch.Interface
			if err == nil {
				wi, err = watchClient.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns),
					&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
			}
			if first {
				ready <- err
				first = false
				if err != nil {
					return
				}
			}
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			w.mu.Lock()
			seen := map[string]bool{}
			for i := range list.Items {
				seen[list.Items[i].Name] = true
				w.set(&list.Items[i])
			}
			for name, p := range w.pods {
				if !seen[name] {
					w.gone(p)
				}
			}
			w.observe()
			w.mu.Unlock()
			for ev := range wi.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if ev.Type == watch.Error || !ok {
					break
				}
				w.mu.Lock()
				if ev.Type == watch.Deleted {
					w.gone(p)
				} else {
					w.set(p)
				}
				w.observe()
				w.mu.Unlock()
			}
			wi.Stop()
		}
	}()
	if err := <-ready; err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	return w
}

func (w *podWatch) stop() {
	w.cancel()
	<-w.done
}

func doNotDisrupt(p *corev1.Pod) bool {
	return p.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true"
}

// set records a pod's new version (w.mu held).
func (w *podWatch) set(p *corev1.Pod) {
	if doNotDisrupt(p) && p.DeletionTimestamp != nil && w.disturbed[p.Name] == "" {
		w.disturbed[p.Name] = "terminating at " + time.Now().Format("15:04:05.000") + " on node " + p.Spec.NodeName
	}
	w.pods[p.Name] = p
}

// gone records a pod's removal (w.mu held).
func (w *podWatch) gone(p *corev1.Pod) {
	if old := w.pods[p.Name]; old != nil && doNotDisrupt(old) && w.disturbed[p.Name] == "" {
		w.disturbed[p.Name] = "removed at " + time.Now().Format("15:04:05.000") + " from node " + old.Spec.NodeName
	}
	delete(w.pods, p.Name)
}

func (w *podWatch) observe() {
	n := 0
	for _, p := range w.pods {
		match := true
		for k, v := range w.selector {
			if p.Labels[k] != v {
				match = false
			}
		}
		if !match || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	if w.minAvailable < 0 || n < w.minAvailable {
		w.minAvailable, w.minAt = n, time.Now().Format("15:04:05.000")
	}
}

// result: the fewest available pods seen (and when), and the
// do-not-disrupt pods that were disturbed.
func (w *podWatch) result() (minAvailable int, at string, disturbed []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, what := range w.disturbed {
		disturbed = append(disturbed, name+": "+what)
	}
	slices.Sort(disturbed)
	return w.minAvailable, w.minAt, disturbed
}
