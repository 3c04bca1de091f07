package bound

import (
	"errors"
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestValidate feeds malformed problems and checks that Solve rejects each
// with a *ProblemError naming the offending field, and never panics.
func TestValidate(t *testing.T) {
	ok := func() Problem {
		return Problem{
			Offerings: []Offering{
				{Price: 1, Alloc: [3]float64{2000, 4 * gib, 10}, Zone: 0},
				{Price: 2, Alloc: [3]float64{4000, 8 * gib, 20}, Zone: 1},
			},
			Groups: []Group{{Count: 3, Request: [3]float64{500, gib, 1}, Allowed: []int{0, 1}}},
		}
	}
	tests := []struct {
		name   string
		mutate func(p *Problem)
		field  string // path of the expected error
		typ    field.ErrorType
	}{
		{"negative price", func(p *Problem) { p.Offerings[1].Price = -1 }, "offerings[1].price", field.ErrorTypeInvalid},
		{"NaN price", func(p *Problem) { p.Offerings[0].Price = math.NaN() }, "offerings[0].price", field.ErrorTypeInvalid},
		{"infinite alloc", func(p *Problem) { p.Offerings[0].Alloc[Memory] = math.Inf(1) }, "offerings[0].alloc[memory]", field.ErrorTypeInvalid},
		{"negative alloc", func(p *Problem) { p.Offerings[1].Alloc[Pods] = -3 }, "offerings[1].alloc[pods]", field.ErrorTypeInvalid},
		{"negative zone", func(p *Problem) { p.Offerings[1].Zone = -1 }, "offerings[1].zone", field.ErrorTypeInvalid},
		{"negative count", func(p *Problem) { p.Groups[0].Count = -1 }, "groups[0].count", field.ErrorTypeInvalid},
		{"huge count", func(p *Problem) { p.Groups[0].Count = 1 << 50 }, "groups[0].count", field.ErrorTypeInvalid},
		{"NaN request", func(p *Problem) { p.Groups[0].Request[CPU] = math.NaN() }, "groups[0].request[cpu]", field.ErrorTypeInvalid},
		{"negative request", func(p *Problem) { p.Groups[0].Request[Memory] = -1 }, "groups[0].request[memory]", field.ErrorTypeInvalid},
		{"no allowed offering", func(p *Problem) { p.Groups[0].Allowed = nil }, "groups[0].allowed", field.ErrorTypeRequired},
		{"allowed index out of range", func(p *Problem) { p.Groups[0].Allowed = []int{0, 2} }, "groups[0].allowed[1]", field.ErrorTypeInvalid},
		{"negative allowed index", func(p *Problem) { p.Groups[0].Allowed = []int{-1} }, "groups[0].allowed[0]", field.ErrorTypeInvalid},
		{"pod does not fit", func(p *Problem) { p.Groups[0].Request[CPU] = 3000 }, "groups[0].allowed[0]", field.ErrorTypeInvalid},
		{"distinct above count", func(p *Problem) { p.Groups[0].DistinctNodes = 4 }, "groups[0].distinctNodes", field.ErrorTypeInvalid},
		{"negative distinct", func(p *Problem) { p.Groups[0].DistinctNodes = -1 }, "groups[0].distinctNodes", field.ErrorTypeInvalid},
		{"negative zone minimum", func(p *Problem) { p.Groups[0].MinPerZone = map[int]int{0: -1} }, "groups[0].minPerZone[0]", field.ErrorTypeInvalid},
		{"zone minimums above count", func(p *Problem) { p.Groups[0].MinPerZone = map[int]int{0: 2, 1: 2} }, "groups[0].minPerZone", field.ErrorTypeInvalid},
		{"zone minimum where nothing is allowed", func(p *Problem) {
			p.Groups[0].Allowed = []int{0}
			p.Groups[0].MinPerZone = map[int]int{1: 1}
		}, "groups[0].minPerZone[1]", field.ErrorTypeInvalid},
		{"zone minimum in an unknown zone", func(p *Problem) { p.Groups[0].MinPerZone = map[int]int{7: 1} }, "groups[0].minPerZone[7]", field.ErrorTypeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ok()
			tc.mutate(&p)
			_, err := Solve(&p)
			if !errors.Is(err, ErrInvalidProblem) {
				t.Fatalf("Solve error %v, want one wrapping ErrInvalidProblem", err)
			}
			var pe *ProblemError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ProblemError", err)
			}
			for _, e := range pe.Errs {
				if e.Field == tc.field && e.Type == tc.typ {
					return
				}
			}
			t.Fatalf("no %s error on %s in %v", tc.typ, tc.field, pe.Errs)
		})
	}
	t.Run("valid problem passes", func(t *testing.T) {
		p := ok()
		if err := Validate(&p); err != nil {
			t.Fatalf("Validate: %v", err)
		}
	})
	t.Run("nil problem", func(t *testing.T) {
		if _, err := Solve(nil); !errors.Is(err, ErrInvalidProblem) {
			t.Fatalf("Solve(nil) = %v", err)
		}
	})
	t.Run("every error is listed", func(t *testing.T) {
		p := ok()
		p.Offerings[0].Price = -1
		p.Groups[0].Count = -1
		p.Groups[0].DistinctNodes = -2
		var pe *ProblemError
		if _, err := Solve(&p); !errors.As(err, &pe) || len(pe.Errs) != 3 {
			t.Fatalf("want 3 errors, got %v", err)
		}
	})
	t.Run("error list is capped", func(t *testing.T) {
		p := ok()
		p.Groups[0].Allowed = make([]int, 1000)
		for i := range p.Groups[0].Allowed {
			p.Groups[0].Allowed[i] = 99
		}
		var pe *ProblemError
		if _, err := Solve(&p); !errors.As(err, &pe) || len(pe.Errs) != maxErrors {
			t.Fatalf("want %d errors, got %v", maxErrors, err)
		}
	})
}
