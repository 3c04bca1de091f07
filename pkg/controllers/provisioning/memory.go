package provisioning

import (
	"maps"
	"sync"
	"time"

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

// handOff returns the pods nominated to the in-flight NodeClaim. With
// take their nominations move to the NodeClaim's node, held until now+ttl
// (the cache may not show the scheduler's nomination yet, and the next
// pass must still count them there); with mark it records them as handed
// to the scheduler at now.
func (m *memory) handOff(nodeClaim, node string, take, mark bool, now time.Time, ttl time.Duration) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.NamespacedName
	for uid, t := range m.noms {
		if t.inFlight && t.name == nodeClaim && t.pod.Name != "" {
			out = append(out, t.pod)
			if take {
				m.noms[uid] = target{name: node, until: now.Add(ttl), pod: t.pod, evacuee: t.evacuee}
			}
			if mark {
				m.handed[uid] = now
			}
		}
	}
	return out
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
