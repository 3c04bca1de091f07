package provisioning

import (
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// target is where a pod is expected to go: an in-flight NodeClaim (valid
// while that NodeClaim is launching) or an existing node (valid until
// until).
type target struct {
	name     string
	inFlight bool
	until    time.Time
	// pod names the pod (the map is keyed by UID).
	pod types.NamespacedName
	// evacuee: planned while bound to a node being replaced (a
	// replacement's reservation, which outlives the binding); otherwise
	// the pod was pending, and its binding anywhere ends the nomination.
	evacuee bool
	// since: when the pod was first expected on this node; verdict: the
	// scheduler's last word on the pod then (its PodScheduled=False
	// message). A nomination to a node that expires while the verdict is
	// unchanged is kept (see memory.extend).
	since   time.Time
	verdict string
}

// memory is what the provisioner remembers between passes. It is lost on
// restart, by design: everything in it can be rebuilt from the cluster
// (in-flight NodeClaims count as capacity without it), it only keeps the
// pods it planned from being planned twice and the events from repeating.
type memory struct {
	mu sync.Mutex
	// noms: pods (pending, or bound to a node being replaced) -> where
	// they were planned.
	noms map[types.UID]target
	// evacuating: nodes being replaced -> their NodeClaim's name. They are
	// MarkedForDeletion in every snapshot until they are gone.
	evacuating map[string]bool
	// nominatedEvent: the target named by the last Nominated event of a
	// pod. failedEvent: the last FailedScheduling reason of a pod.
	nominatedEvent map[types.UID]string
	failedEvent    map[types.UID]string
	// limitEvent: the last limit message per NodePool.
	limitEvent map[string]string
	// handed: when a pod was handed to the scheduler (handoff). A hand-off
	// older than the nomination TTL whose pod is still unbound no longer
	// holds room.
	handed map[types.UID]time.Time
}

func newMemory() *memory {
	return &memory{
		noms:           map[types.UID]target{},
		evacuating:     map[string]bool{},
		nominatedEvent: map[types.UID]string{},
		failedEvent:    map[types.UID]string{},
		limitEvent:     map[string]string{},
		handed:         map[types.UID]time.Time{},
	}
}

// nominated reports whether the pod has a nomination that still holds at
// now (in-flight nominations are checked against the cluster at the next
// pass; here they always hold).
func (m *memory) nominated(uid types.UID, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.noms[uid]
	return ok && (t.inFlight || now.Before(t.until))
}

// plannedOnto lists the pods planned onto the NodeClaim while it was in
// flight, or onto its node since it appeared, and not handed off yet.
// Callers hold m.mu.
func (m *memory) plannedOnto(nodeClaim, node string) map[types.UID]bool {
	out := map[types.UID]bool{}
	for uid, t := range m.noms {
		if t.inFlight && t.name == nodeClaim || !t.inFlight && t.name == node && m.handed[uid].IsZero() && !t.evacuee {
			out[uid] = true
		}
	}
	return out
}

// plannedRefs is plannedOnto, with each pod's namespace and name, under
// the lock.
func (m *memory) plannedRefs(nodeClaim, node string) map[types.UID]types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[types.UID]types.NamespacedName{}
	for uid := range m.plannedOnto(nodeClaim, node) {
		out[uid] = m.noms[uid].pod
	}
	return out
}

// planned is plannedOnto under the lock.
func (m *memory) planned(nodeClaim, node string) map[types.UID]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plannedOnto(nodeClaim, node)
}

// handOff returns the pods planned onto the NodeClaim or its node (see
// plannedOnto) and moves their nominations to the node, held until now+ttl (the
// cache may not show the scheduler's nomination yet, and the next pass
// must still count them there) and kept while the scheduler's verdict on
// the pod stays what verdicts says (see extend). It returns how many moved
// and those of them in write, recorded as handed to the scheduler at now.
func (m *memory) handOff(nodeClaim, node string, write map[types.UID]bool, verdicts map[types.UID]string, now time.Time, ttl time.Duration) (moved int, handed []types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.plannedOnto(nodeClaim, node) {
		if t := m.noms[uid]; t.pod.Name != "" {
			moved++
			m.noms[uid] = target{name: node, until: now.Add(ttl), pod: t.pod, evacuee: t.evacuee, since: now, verdict: verdicts[uid]}
			// The pod's Nominated event named the NodeClaim: its node is
			// the same place, and a later pass that plans the pod there
			// announces nothing new.
			if m.nominatedEvent[uid] == nodeClaim {
				m.nominatedEvent[uid] = node
			}
			if write[uid] {
				handed = append(handed, t.pod)
				m.handed[uid] = now
			}
		}
	}
	return moved, handed
}

// refused reports whether the update shows the scheduler clearing the
// nomination of a pod handed to it, while the pod is unbound: it tried the
// pod and the node could not take it. The pod's nomination is dropped, so
// the next pass plans it again.
func (m *memory) refused(old, pod *corev1.Pod) bool {
	if old.Status.NominatedNodeName == "" || pod.Status.NominatedNodeName != "" || pod.Spec.NodeName != "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.handed[pod.UID]; !ok {
		return false
	}
	delete(m.handed, pod.UID)
	if t, ok := m.noms[pod.UID]; ok && !t.inFlight && t.name == old.Status.NominatedNodeName {
		delete(m.noms, pod.UID)
	}
	return true
}

// heldHandoffs is the hand-off times a snapshot should use: a pod handed
// off less than hold ago that still carries the nomination and is unbound
// counts as handed off now (the scheduler has not tried it yet: its room
// stays held); the others as handed.
func (m *memory) heldHandoffs(pods []*corev1.Pod, now time.Time, hold time.Duration) map[types.UID]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[types.UID]time.Time, len(m.handed))
	for uid, at := range m.handed {
		out[uid] = at
	}
	for _, pod := range pods {
		at, ok := m.handed[pod.UID]
		if ok && pod.Spec.NodeName == "" && pod.Status.NominatedNodeName != "" && now.Sub(at) < hold {
			out[pod.UID] = now
		}
	}
	return out
}

// extend keeps the expired nominations to nodes whose pods the scheduler
// has not tried since (the pod is unbound and its PodScheduled=False
// message is the one it had when it was nominated), for another ttl, up
// to hold after the first: a loaded scheduler works through a burst of
// pods slowly, and planning a pod again before it was even tried would
// launch a second node for it. A pod the scheduler tried and could not
// place has a new message, and is planned again. Callers hold m.mu.
func (m *memory) extend(pods map[types.UID]*corev1.Pod, now time.Time, ttl, hold time.Duration) {
	for uid, t := range m.noms {
		pod := pods[uid]
		if t.inFlight || now.Before(t.until) || pod == nil || pod.Spec.NodeName != "" ||
			t.since.IsZero() || now.Sub(t.since) >= hold || schedulerVerdict(pod) != t.verdict {
			continue
		}
		t.until = now.Add(ttl)
		m.noms[uid] = t
	}
}

// schedulerVerdict is the message of the pod's PodScheduled=False
// condition ("" when it has none).
func schedulerVerdict(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// forget drops everything remembered about a pod.
func (m *memory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.noms, uid)
	delete(m.nominatedEvent, uid)
	delete(m.failedEvent, uid)
	delete(m.handed, uid)
}

// prune drops pods not in live and evacuating nodes not in nodes.
func (m *memory) prune(live map[types.UID]bool, nodes map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.noms, func(uid types.UID, _ target) bool { return !live[uid] })
	maps.DeleteFunc(m.nominatedEvent, func(uid types.UID, _ string) bool { return !live[uid] })
	maps.DeleteFunc(m.failedEvent, func(uid types.UID, _ string) bool { return !live[uid] })
	maps.DeleteFunc(m.handed, func(uid types.UID, _ time.Time) bool { return !live[uid] })
	maps.DeleteFunc(m.evacuating, func(n string, _ bool) bool { return !nodes[n] })
}

// reserves reports whether a pod's nominatedNodeName still holds room: it
// was not handed off by the provisioner (the scheduler's own), or less than
// ttl ago. Callers hold m.mu.
func (m *memory) reserves(uid types.UID, now time.Time, ttl time.Duration) bool {
	at, ok := m.handed[uid]
	return !ok || now.Sub(at) < ttl
}
