package main

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/kubenode"
)

// fleet is a watcher with n available pods of app "web" spread over two
// nodes, a PDB wanting desired of them and the Deployment at n replicas.
func fleet(n int, desired int32) *fleetWatcher {
	w := newFleetWatcher()
	w.nodes["a"], w.nodes["b"] = true, true
	w.desiredHealthy["web"] = desired
	w.replicas["web"] = int32(n)
	for i := range n {
		node := "a"
		if i%2 == 1 {
			node = "b"
		}
		w.podChanged(fmt.Sprintf("web-%d", i), &podState{app: "web", node: node, ready: true})
	}
	return w
}

func TestWatcherEvictionWithinBudgetIsNoViolation(t *testing.T) {
	w := fleet(4, 3)
	w.podChanged("web-0", &podState{app: "web", node: "a", ready: true, deleting: true, cause: causeEviction})
	if s := w.snapshot(); s.violations != 0 || s.lostNoEviction != 0 || s.podsRunning != 3 {
		t.Fatalf("one eviction within the budget: %+v", s)
	}
	// A second one leaves 2 of the 3 the PDB wants: a violation.
	w.podChanged("web-2", &podState{app: "web", node: "a", ready: true, deleting: true, cause: causeEviction})
	if s := w.snapshot(); s.violations != 1 || s.lostNoEviction != 0 {
		t.Fatalf("an eviction past the budget: %+v", s)
	}
}

func TestWatcherNodeDeletedUnderPods(t *testing.T) {
	w := fleet(4, 3)
	// Node a still holds web-0 and web-2: deleting it loses both without
	// an eviction, past the budget.
	w.nodeGone("a")
	s := w.snapshot()
	if s.lostNoEviction != 2 || s.violations != 1 || s.podsRunning != 2 {
		t.Fatalf("node deleted under two pods: %+v", s)
	}
	// Their later deletion by the pod garbage collector is not counted again.
	w.podChanged("web-0", nil)
	w.podChanged("web-2", nil)
	if s2 := w.snapshot(); s2.violations != 1 || s2.lostNoEviction != 2 {
		t.Fatalf("pod GC after the node: %+v", s2)
	}
}

func TestWatcherInterruptedNodeIsInvoluntary(t *testing.T) {
	w := fleet(4, 3)
	w.markInterrupted("a")
	w.podChanged("web-0", &podState{app: "web", node: "a", ready: true, deleting: true, cause: causeEviction})
	w.nodeGone("a")
	if s := w.snapshot(); s.violations != 0 || s.lostNoEviction != 0 || s.lostToInterrupt != 1 || s.drainedFromInterrupted != 1 {
		t.Fatalf("interrupted node: %+v", s)
	}
}

func TestWatcherScaleDownIsNoViolation(t *testing.T) {
	w := fleet(4, 3)
	w.setReplicas("web", 2)
	// The ReplicaSet deletes two surplus pods (no DisruptionTarget
	// condition), even though the PDB's figure has not caught up yet.
	w.podChanged("web-0", &podState{app: "web", node: "a", ready: true, deleting: true})
	w.podChanged("web-1", &podState{app: "web", node: "b", ready: true, deleting: true})
	if s := w.snapshot(); s.violations != 0 || s.scaleDownDeletes != 2 {
		t.Fatalf("scale-down: %+v", s)
	}
	// A third deletion without a condition is not the ReplicaSet's.
	w.podChanged("web-2", &podState{app: "web", node: "a", ready: true, deleting: true})
	if s := w.snapshot(); s.violations != 1 || s.lostNoEviction != 1 {
		t.Fatalf("a deletion below the replicas: %+v", s)
	}
}

func TestWatcherDuplicateNodeClaims(t *testing.T) {
	w := newFleetWatcher()
	claim := func(name, id string) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Status.ProviderID = id
		return nc
	}
	w.claimChanged(claim("a", ""), false)
	w.claimChanged(claim("a", "aws:///us-east-1a/i-1"), false)
	w.claimChanged(claim("b", "aws:///us-east-1a/i-2"), false)
	if s := w.snapshot(); s.claimsCreated != 2 || len(s.duplicates) != 0 {
		t.Fatalf("two claims, two instances: %+v", s)
	}
	w.claimChanged(claim("b", ""), true)
	w.claimChanged(claim("c", "aws:///us-east-1a/i-1"), false)
	if s := w.snapshot(); s.claimsCreated != 3 || len(s.duplicates) != 1 {
		t.Fatalf("a second claim on i-1: %+v", s)
	}
}

func TestParseMaxUnavailable(t *testing.T) {
	for _, ok := range []string{"25%", "0%", "100%", "0", "3"} {
		if _, err := parseMaxUnavailable(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "abc", "101%", "-1", "25%%", "2.5%"} {
		if _, err := parseMaxUnavailable(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSpreadGivesEveryKill(t *testing.T) {
	phases := []phase{{weight: 14}, {weight: 8}, {weight: 14}, {weight: 14}}
	for _, kills := range []int{0, 1, 7, 50, 51} {
		got, sum := spread(kills, phases), 0
		for _, n := range got {
			sum += n
		}
		if sum != kills {
			t.Errorf("spread(%d) = %v: %d kills", kills, got, sum)
		}
	}
	if got := spread(50, phases); got[0] != 14 || got[1] != 8 {
		t.Errorf("spread(50) = %v, want 14 and 8 first", got)
	}
}

func TestRelaunches(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	in := func(id, claim, state string, launch, change time.Duration) awsemu.Instance {
		return awsemu.Instance{ID: id, State: state, LaunchTime: t0.Add(launch), StateChangeTime: t0.Add(change),
			Tags: map[string]string{kubenode.TagNodeClaim: claim}}
	}
	all := []awsemu.Instance{
		in("i-1", "a", awsemu.StateTerminated, 0, 32*time.Second),
		in("i-2", "a", awsemu.StateRunning, 29*time.Second, 30*time.Second),
		in("i-3", "b", awsemu.StateRunning, 5*time.Second, 6*time.Second),
		in("i-4", "c", awsemu.StateRunning, 40*time.Second, 41*time.Second),
		in("i-5", "c", awsemu.StateRunning, 50*time.Second, 51*time.Second),
	}
	got := relaunches(all, []time.Time{t0.Add(-time.Second), t0.Add(800 * time.Millisecond), t0.Add(10 * time.Second)})
	if len(got) != 2 {
		t.Fatalf("relaunches = %v, want a's i-1 and c's i-4", got)
	}
	if g := got[0]; g.Claim != "a" || g.Orphan != "i-1" || g.Lived != 32*time.Second || g.KillAfter != 800*time.Millisecond {
		t.Errorf("a: %+v", g)
	}
	if g := got[1]; g.Claim != "c" || g.Orphan != "i-4" || g.Lived != 0 || g.KillAfter != -1 {
		t.Errorf("c: %+v", g)
	}
}
