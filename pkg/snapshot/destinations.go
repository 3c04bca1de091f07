package snapshot

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Destination is how many pods of one owner a disruption command planned
// onto one node: Planned of them, on top of the Base pods of that owner
// already there when the command started.
type Destination struct {
	Planned int `json:"n"`
	Base    int `json:"base,omitempty"`
}

// Destinations are where a disruption command planned the pods it evicts,
// by the controller that recreates them (a ReplicaSet's, a StatefulSet's
// UID), then by target: a node's name, or a replacement NodeClaim's name
// (the caller resolves it to its node). An evicted pod comes back as a new
// pod of the same owner; the kube-scheduler would put it on whatever node
// scores best, which need not be the one the planner used, and then a
// pod planned there later finds no room. Nominating the new pods to the
// planned nodes (status.nominatedNodeName, which the scheduler tries
// first, and counts as taken while it filters other pods) keeps the plan.
type Destinations map[types.UID]map[string]Destination

// Add counts n more pods of owner planned onto target, with base pods of
// owner already there. Commands over the same owner and node add up; the
// base is the smallest seen.
func (d Destinations) Add(owner types.UID, target string, n, base int) {
	m := d[owner]
	if m == nil {
		m = map[string]Destination{}
		d[owner] = m
	}
	cur, ok := m[target]
	if ok {
		cur.Base = min(cur.Base, base)
	} else {
		cur.Base = base
	}
	cur.Planned += n
	m[target] = cur
}

// OwnerOf is the UID of the controller that recreates a pod when it is
// evicted ("" when the pod would not come back: no controller, a
// DaemonSet's or a Node's).
func OwnerOf(pod *corev1.Pod) types.UID {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind == "Node" || controlledByDaemonSet(pod) {
		return ""
	}
	return owner.UID
}

// NominationInput is what Nominations reads.
type NominationInput struct {
	// Destinations, with every target already a node's name (targets
	// whose node is not known yet left out).
	Destinations Destinations
	Pods         []*corev1.Pod
	// Written are nominations written earlier (pod UID -> node) that the
	// pods listed may not show yet.
	Written map[types.UID]string
}

// NominationWrite is one nomination to write: status.nominatedNodeName of
// Pod set to Node.
type NominationWrite struct {
	Pod  *corev1.Pod
	Node string
}

// Nominations returns where to nominate the new pods of the destinations'
// owners: each unbound pod of such an owner that the kube-scheduler has not
// tried yet (no PodScheduled condition, or only the SchedulingGated one of a
// pod held by a scheduling gate), has no nomination and is not
// being deleted gets the target with the most room left for its owner,
// oldest pod first. Room left on a target is Planned minus the pods of the
// owner there beyond Base (bound there, or nominated there by anyone,
// including Written). A pod the scheduler already tried is left alone: it
// refused the plan, or it went before the plan was known; either way
// provisioning decides for it. Nothing in the input is modified.
func Nominations(in NominationInput) []NominationWrite {
	if len(in.Destinations) == 0 {
		return nil
	}
	there := map[types.UID]map[string]int{} // owner -> node -> pods there or nominated there
	var fresh []*corev1.Pod
	for _, pod := range in.Pods {
		owner := OwnerOf(pod)
		if owner == "" || in.Destinations[owner] == nil || terminal(pod) {
			continue
		}
		node := pod.Spec.NodeName
		if node == "" {
			node = pod.Status.NominatedNodeName
		}
		if node == "" && pod.DeletionTimestamp == nil {
			node = in.Written[pod.UID]
		}
		if node != "" {
			if there[owner] == nil {
				there[owner] = map[string]int{}
			}
			there[owner][node]++
			continue
		}
		if pod.DeletionTimestamp == nil && !tried(pod) {
			fresh = append(fresh, pod)
		}
	}
	sort.SliceStable(fresh, func(i, j int) bool {
		a, b := fresh[i], fresh[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	var out []NominationWrite
	for _, pod := range fresh {
		owner := OwnerOf(pod)
		best, bestLeft := "", 0
		for target, d := range in.Destinations[owner] {
			left := d.Planned - max(there[owner][target]-d.Base, 0)
			if left > bestLeft || left == bestLeft && left > 0 && target < best {
				best, bestLeft = target, left
			}
		}
		if best == "" {
			continue
		}
		if there[owner] == nil {
			there[owner] = map[string]int{}
		}
		there[owner][best]++
		out = append(out, NominationWrite{Pod: pod, Node: best})
	}
	return out
}

// tried: the kube-scheduler has looked at the pod (it set PodScheduled).
// A pod held by a scheduling gate carries PodScheduled=False with reason
// SchedulingGated from the API server: not tried.
func tried(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Reason != corev1.PodReasonSchedulingGated
		}
	}
	return false
}
