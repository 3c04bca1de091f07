package bound_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/engine/bound"
)

// Six web pods (1 cpu, 2 GiB) and two batch pods (3 cpu, 1 GiB) that must run
// on different nodes, on two node shapes priced $0.05 per cpu. Together they
// need 12 cpu, so no plan costs less than $0.60, and one does: each batch pod
// shares a 4-cpu node with a web pod, and the other four web pods fill a
// third 4-cpu node. The bound proves that $0.60 is the least possible.
func ExampleSolve() {
	const gib = 1 << 30
	p := &bound.Problem{
		Offerings: []bound.Offering{
			{Price: 0.20, Alloc: [3]float64{4000, 8 * gib, 30}, Zone: 0},
			{Price: 0.40, Alloc: [3]float64{8000, 16 * gib, 60}, Zone: 0},
		},
		Groups: []bound.Group{
			{Count: 6, Request: [3]float64{1000, 2 * gib, 1}, Allowed: []int{0, 1}},
			{Count: 2, Request: [3]float64{3000, 1 * gib, 1}, Allowed: []int{0, 1}, DistinctNodes: 2},
		},
	}
	res, err := bound.Solve(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("at least $%.2f/h\n", res.LowerBound)
	// Output:
	// at least $0.60/h
}

// Solve rejects malformed input with every offending field named.
func ExampleSolve_invalid() {
	p := &bound.Problem{
		Offerings: []bound.Offering{{Price: -1, Alloc: [3]float64{1000, 1 << 30, 10}}},
		Groups:    []bound.Group{{Count: 1, Request: [3]float64{2000, 1 << 20, 1}, Allowed: []int{0, 3}}},
	}
	_, err := bound.Solve(p)
	fmt.Println(err)
	// Output:
	// bound: invalid problem: [offerings[0].price: Invalid value: -1: must be a finite number >= 0, groups[0].allowed[0]: Invalid value: 0: one pod does not fit offering 0: cpu request 2000 > allocatable 1000, groups[0].allowed[1]: Invalid value: 3: offering index out of range 0..0]
}
