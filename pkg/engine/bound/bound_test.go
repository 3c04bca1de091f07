package bound

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

const gib = 1 << 30

// TestKnownCases checks problems whose optimum is worked out by hand in each
// case's comment. want is the integral optimum; the bound must not exceed it,
// and in these cases the strengthened relaxation is exact, so it must reach it.
func TestKnownCases(t *testing.T) {
	tests := []struct {
		name string
		p    Problem
		want float64
	}{
		{
			// 10 pods of 1 cpu, nodes of 4 cpu at $1: 10/4 -> 3 nodes, $3.
			// (The plain relaxation says 2.5.)
			name: "one group one offering",
			p: Problem{
				Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 16 * gib, 110}}},
				Groups:    []Group{{Count: 10, Request: [3]float64{1000, gib, 1}, Allowed: []int{0}}},
			},
			want: 3,
		},
		{
			// 8 pods of 1 cpu fill two 4-cpu nodes exactly: $2.
			name: "pods divide the node exactly",
			p: Problem{
				Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 16 * gib, 110}}},
				Groups:    []Group{{Count: 8, Request: [3]float64{1000, gib, 1}, Allowed: []int{0}}},
			},
			want: 2,
		},
		{
			// A pods are 3 cpu/1 GiB, B pods 1 cpu/3 GiB; a node has 4 cpu/4 GiB
			// at $1. Alone each pod needs its own node (2A+2B: $4); one A and one
			// B fill a node exactly, so two nodes do: $2.
			name: "mixing two groups beats packing them apart",
			p: Problem{
				Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 4 * gib, 110}}},
				Groups: []Group{
					{Count: 2, Request: [3]float64{3000, gib, 1}, Allowed: []int{0}},
					{Count: 2, Request: [3]float64{1000, 3 * gib, 1}, Allowed: []int{0}},
				},
			},
			want: 2,
		},
		{
			// Nodes hold one pod; zone 0 costs $1, zone 1 $2. Four pods, one of
			// which must be in zone 1: 3*$1 + 1*$2 = $5 (not $4).
			name: "zone minimum forces the expensive zone",
			p: Problem{
				Offerings: []Offering{
					{Price: 1, Alloc: [3]float64{1000, gib, 110}, Zone: 0},
					{Price: 2, Alloc: [3]float64{1000, gib, 110}, Zone: 1},
				},
				Groups: []Group{{Count: 4, Request: [3]float64{1000, gib, 1}, Allowed: []int{0, 1}, MinPerZone: map[int]int{1: 1}}},
			},
			want: 5,
		},
		{
			// Four small pods would share one $1 node, but each needs its own
			// node: $4.
			name: "distinct nodes force k nodes",
			p: Problem{
				Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 16 * gib, 110}}},
				Groups:    []Group{{Count: 4, Request: [3]float64{100, 128 << 20, 1}, Allowed: []int{0}, DistinctNodes: 4}},
			},
			want: 4,
		},
		{
			// One 1.5-cpu pod: the 2-cpu node at $2 is the cheapest that fits
			// (the plain relaxation would pay 0.75 of it).
			name: "single pod pays a whole node",
			p: Problem{
				Offerings: []Offering{
					{Price: 2, Alloc: [3]float64{2000, 8 * gib, 110}},
					{Price: 4, Alloc: [3]float64{4000, 16 * gib, 110}},
				},
				Groups: []Group{{Count: 1, Request: [3]float64{1500, gib, 1}, Allowed: []int{0, 1}}},
			},
			want: 2,
		},
		{
			// Pods of 1.5 cpu: a 2-cpu node ($2) holds one, a 4-cpu node ($4)
			// holds two, so every pod costs $2: six pods, $12. By cpu alone
			// the relaxation would say 9 cpu = $9.
			name: "pods that waste part of every node",
			p: Problem{
				Offerings: []Offering{
					{Price: 2, Alloc: [3]float64{2000, 8 * gib, 110}},
					{Price: 4, Alloc: [3]float64{4000, 16 * gib, 110}},
				},
				Groups: []Group{{Count: 6, Request: [3]float64{1500, gib, 1}, Allowed: []int{0, 1}}},
			},
			want: 12,
		},
		{
			// Pod slots bind: 5 slots per node, 12 tiny pods -> 3 nodes.
			name: "pod slots bind",
			p: Problem{
				Offerings: []Offering{{Price: 0.5, Alloc: [3]float64{64000, 256 * gib, 5}}},
				Groups:    []Group{{Count: 12, Request: [3]float64{10, 1 << 20, 1}, Allowed: []int{0}}},
			},
			want: 1.5,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Solve(&tc.p)
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			if res.LowerBound > tc.want*(1+1e-9) {
				t.Fatalf("LowerBound %.12g exceeds the optimum %.12g", res.LowerBound, tc.want)
			}
			if res.LowerBound < tc.want*(1-1e-6) {
				t.Fatalf("LowerBound %.12g, want %.12g (relaxation should be exact here); result %+v", res.LowerBound, tc.want, res)
			}
			if !res.Converged {
				t.Errorf("not converged: %+v", res)
			}
			if res.LPValue < res.Relaxation || res.LPValue > tc.want*(1+1e-6) {
				t.Errorf("LPValue %.12g outside [bound %.12g, optimum %.12g]", res.LPValue, res.LowerBound, tc.want)
			}
		})
	}
}

func TestEmptyProblem(t *testing.T) {
	res, err := Solve(&Problem{Offerings: []Offering{{Price: 1, Alloc: [3]float64{1, 1, 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.LowerBound != 0 || !res.Converged {
		t.Fatalf("empty problem: got %+v", res)
	}
	res, err = Solve(&Problem{
		Offerings: []Offering{{Price: 1, Alloc: [3]float64{1, 1, 1}}},
		Groups:    []Group{{Count: 0, Allowed: []int{0}}},
	})
	if err != nil || res.LowerBound != 0 {
		t.Fatalf("zero-count group: %+v, %v", res, err)
	}
}

// TestPodPricesOneGroup: for one group on one offering whose nodes it fills
// exactly, the proof must price each pod at its share of a node.
func TestPodPricesOneGroup(t *testing.T) {
	p := Problem{
		Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 16 * gib, 110}}},
		Groups:    []Group{{Count: 8, Request: [3]float64{1000, gib, 1}, Allowed: []int{0}}},
	}
	res, err := Solve(&p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.PodPrices[0], 1.0/4; math.Abs(got-want) > 1e-6 {
		t.Fatalf("pod price %.9g, want %.9g (a quarter of a $1 node)", got, want)
	}
}

// TestDeterministicAndPure: the same problem gives the same result every
// time, and Solve leaves its input as it found it.
func TestDeterministicAndPure(t *testing.T) {
	p := referenceProblem(300)
	snapshot := func(p *Problem) string { return fmt.Sprintf("%v", *p) }
	before := snapshot(p)
	first, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		again, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("run %d differs:\n%+v\n%+v", i, first, again)
		}
	}
	if snapshot(p) != before {
		t.Fatal("Solve modified its input")
	}
}
