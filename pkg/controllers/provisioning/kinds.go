package provisioning

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// unboundKinds counts the unbound pods of each kind (kindOf), kept current
// by the pod informer's events, with one pod of each kind (pods of one
// kind share their spec). The hand-off asks which kinds could take a
// node's room (otherKinds); with the counts that costs one check per kind
// instead of a scan of every pod in the cluster for every node that
// registers (30,000 pods times 3,000 nodes at fleet size).
type unboundKinds struct {
	mu    sync.Mutex
	count map[string]int
	rep   map[string]*corev1.Pod
}

func newUnboundKinds() *unboundKinds {
	return &unboundKinds{count: map[string]int{}, rep: map[string]*corev1.Pod{}}
}

// waiting: the pod is unbound and not finished or deleted (otherKinds'
// filter).
func waiting(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func (u *unboundKinds) add(pod *corev1.Pod) {
	if pod == nil || !waiting(pod) {
		return
	}
	k := kindOf(pod)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.count[k]++
	u.rep[k] = pod
}

func (u *unboundKinds) remove(pod *corev1.Pod) {
	if pod == nil || !waiting(pod) {
		return
	}
	k := kindOf(pod)
	u.mu.Lock()
	defer u.mu.Unlock()
	switch n := u.count[k]; {
	case n > 1:
		// The representative may be the pod removed: it still answers for
		// the kind, whose pods share their spec.
		u.count[k] = n - 1
	default:
		delete(u.count, k)
		delete(u.rep, k)
	}
}

func (u *unboundKinds) update(old, pod *corev1.Pod) {
	u.remove(old)
	u.add(pod)
}

// others returns the kinds of unbound pods other than those planned onto
// the node that the scheduler could place there (see otherKinds): a kind
// counts if it has more unbound pods than the planned ones of its kind.
func (u *unboundKinds) others(plannedPods []*corev1.Pod, node *corev1.Node) map[string]bool {
	mine := map[string]int{}
	for _, pod := range plannedPods {
		if waiting(pod) {
			mine[kindOf(pod)]++
		}
	}
	type cand struct {
		kind string
		pod  *corev1.Pod
	}
	var cands []cand
	u.mu.Lock()
	for k, n := range u.count {
		if n > mine[k] {
			cands = append(cands, cand{k, u.rep[k]})
		}
	}
	u.mu.Unlock()
	kinds := map[string]bool{}
	for _, c := range cands {
		if mayRunOn(c.pod, node) {
			kinds[c.kind] = true
		}
	}
	return kinds
}
