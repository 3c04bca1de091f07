package provisioning

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestHandOffKeepsTheNominatedEvent: a pod announced on a NodeClaim and
// handed to the NodeClaim's node is announced there already; a pod
// announced elsewhere is not.
func TestHandOffKeepsTheNominatedEvent(t *testing.T) {
	m := newMemory()
	now := time.Unix(1_700_000_000, 0)
	onClaim, elsewhere := types.UID("a"), types.UID("b")
	m.noms[onClaim] = target{name: "nc-1", inFlight: true, pod: types.NamespacedName{Namespace: "ns", Name: "a"}}
	m.nominatedEvent[onClaim] = "nc-1"
	m.noms[elsewhere] = target{name: "nc-1", inFlight: true, pod: types.NamespacedName{Namespace: "ns", Name: "b"}}
	m.nominatedEvent[elsewhere] = "nc-0"

	if moved, _ := m.handOff("nc-1", "node-1", nil, nil, now, time.Minute); moved != 2 {
		t.Fatalf("moved %d pods, want 2", moved)
	}
	if got := m.nominatedEvent[onClaim]; got != "node-1" {
		t.Errorf("pod announced on nc-1: last announced target %q after the hand-off, want its node node-1 (no second Nominated event)", got)
	}
	if got := m.nominatedEvent[elsewhere]; got != "nc-0" {
		t.Errorf("pod announced on nc-0: last announced target %q after the hand-off, want nc-0 kept", got)
	}
}
