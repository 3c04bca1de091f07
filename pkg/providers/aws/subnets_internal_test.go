package aws

import (
	"testing"
	"time"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// Launches in flight and launched since the last description count
// against a subnet's free addresses; a description made after a launch
// finished already holds it.
func TestSubnetPickCountsLaunchesInFlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cands := []awsv1.Subnet{{ID: "subnet-a", Zone: "z1"}, {ID: "subnet-b", Zone: "z1"}, {ID: "subnet-c", Zone: "z2"}}
	s := newSubnets()
	s.observe(t0, map[string]int64{"subnet-a": 3, "subnet-b": 2, "subnet-c": 0})

	p1 := s.pick(cands, nil)
	if p1["z1"] != "subnet-a" || p1["z2"] != "subnet-c" {
		t.Fatalf("first pick %v; want subnet-a (3 free) in z1 and subnet-c, the only one, in z2", p1)
	}
	// One launch in flight in a: 2 left, tie with b, the lowest id wins.
	p2 := s.pick(cands, nil)
	if p2["z1"] != "subnet-a" {
		t.Fatalf("second pick %v; want subnet-a (3-1 free ties b's 2; lowest id)", p2)
	}
	// Two in flight in a: 1 left, b has 2.
	p3 := s.pick(cands, nil)
	if p3["z1"] != "subnet-b" {
		t.Fatalf("third pick %v; want subnet-b (a has 3-2 free)", p3)
	}
	// The launches end: the first two in a, the third without an instance.
	s.done(p1, "subnet-a", t0.Add(time.Second))
	s.done(p2, "subnet-a", t0.Add(2*time.Second))
	s.done(p3, "", t0.Add(3*time.Second))
	if got := s.pick(cands, nil)["z1"]; got != "subnet-b" {
		t.Fatalf("after two launches in a: picked %s; want subnet-b (a has 3-2 free)", got)
	}
	// A description asked for between the two launches holds the first,
	// not the second.
	s.observe(t0.Add(1500*time.Millisecond), map[string]int64{"subnet-a": 4, "subnet-b": 2})
	s.inflight = map[string]int{}
	if n := s.availableLocked("subnet-a"); n != 3 {
		t.Errorf("subnet-a available %d; want 3 (4 described, one launch after the description)", n)
	}
	// An older description does not replace a newer one.
	s.observe(t0, map[string]int64{"subnet-a": 100})
	if n := s.availableLocked("subnet-a"); n != 3 {
		t.Errorf("subnet-a available %d after a stale description; want 3", n)
	}
	// EC2 said full: it counts as having none, and skip leaves it out.
	s.full("subnet-b", t0.Add(4*time.Second))
	if got := s.pick(cands, map[string]bool{"subnet-a": true})["z1"]; got != "subnet-b" {
		t.Errorf("with a skipped, picked %s; want subnet-b", got)
	}
	if got := s.pick(cands, nil)["z1"]; got != "subnet-a" {
		t.Errorf("picked %s; want subnet-a (b is full)", got)
	}
	// A subnet never described counts as having plenty.
	if got := s.pick(append(cands, awsv1.Subnet{ID: "subnet-d", Zone: "z2"}), nil)["z2"]; got != "subnet-d" {
		t.Errorf("z2: picked %s; want subnet-d (never described) over subnet-c (0 free)", got)
	}
}
