package bound

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidProblem is wrapped by every error Solve returns for malformed
// input; errors.As gives the *ProblemError with the details.
var ErrInvalidProblem = errors.New("bound: invalid problem")

// ProblemError lists everything wrong with a Problem, each entry naming the
// offending field by path ("groups[3].allowed[2]", "offerings[7].price").
type ProblemError struct {
	Errs field.ErrorList
}

func (e *ProblemError) Error() string {
	return fmt.Sprintf("%v: %v", ErrInvalidProblem, e.Errs.ToAggregate())
}

// Is makes errors.Is(err, ErrInvalidProblem) true.
func (e *ProblemError) Is(target error) bool { return target == ErrInvalidProblem }

const (
	// maxCount bounds Group.Count and MinPerZone values, so that sums of
	// counts stay exact in float64 and int64.
	maxCount = 1 << 40
	// maxErrors caps the list a ProblemError carries.
	maxErrors = 64
	// fitSlack is the relative slack allowed when checking that one pod fits
	// an offering, for requests and allocatable computed in floating point.
	fitSlack = 1e-9
)

var resourceNames = [NumResources]string{"cpu", "memory", "pods"}

// fits reports whether a request fits an allocatable, with fitSlack.
func fits(req, alloc float64) bool {
	return req <= alloc+fitSlack*math.Max(alloc, 1)
}

// Validate checks p against the contract of Solve and returns a *ProblemError
// (wrapping ErrInvalidProblem) listing every violation, or nil.
//
// A valid problem always has a feasible integral plan (every pod alone on a
// node of an allowed offering, in the zone its group's minimum names), so the
// bound Solve proves is finite.
func Validate(p *Problem) error {
	var errs field.ErrorList
	add := func(e *field.Error) bool {
		if len(errs) < maxErrors {
			errs = append(errs, e)
		}
		return len(errs) < maxErrors
	}
	if p == nil {
		return &ProblemError{Errs: field.ErrorList{field.Required(field.NewPath("problem"), "must not be nil")}}
	}
	offPath := field.NewPath("offerings")
	for i := range p.Offerings {
		o := &p.Offerings[i]
		path := offPath.Index(i)
		if !finiteNonNeg(o.Price) {
			add(field.Invalid(path.Child("price"), o.Price, "must be a finite number >= 0"))
		}
		for r, a := range o.Alloc {
			if !finiteNonNeg(a) {
				add(field.Invalid(path.Child("alloc").Key(resourceNames[r]), a, "must be a finite number >= 0"))
			}
		}
		if o.Zone < 0 {
			add(field.Invalid(path.Child("zone"), o.Zone, "must be >= 0"))
		}
	}
	grpPath := field.NewPath("groups")
	for gi := range p.Groups {
		if len(errs) >= maxErrors {
			break
		}
		validateGroup(p, gi, grpPath.Index(gi), add)
	}
	if len(errs) == 0 {
		return nil
	}
	return &ProblemError{Errs: errs}
}

func validateGroup(p *Problem, gi int, path *field.Path, add func(*field.Error) bool) {
	g := &p.Groups[gi]
	if g.Count < 0 || g.Count > maxCount {
		add(field.Invalid(path.Child("count"), g.Count, fmt.Sprintf("must be in 0..%d", int64(maxCount))))
	}
	reqOK := true
	for r, q := range g.Request {
		if !finiteNonNeg(q) {
			reqOK = false
			add(field.Invalid(path.Child("request").Key(resourceNames[r]), q, "must be a finite number >= 0"))
		}
	}
	if len(g.Allowed) == 0 {
		add(field.Required(path.Child("allowed"), "a group needs at least one allowed offering (leave unschedulable pods out of the problem)"))
	}
	zonesAllowed := map[int]bool{}
	for j, o := range g.Allowed {
		if o < 0 || o >= len(p.Offerings) {
			if !add(field.Invalid(path.Child("allowed").Index(j), o, fmt.Sprintf("offering index out of range 0..%d", len(p.Offerings)-1))) {
				return
			}
			continue
		}
		off := &p.Offerings[o]
		zonesAllowed[off.Zone] = true
		if !reqOK {
			continue
		}
		for r := range NumResources {
			if finiteNonNeg(off.Alloc[r]) && !fits(g.Request[r], off.Alloc[r]) {
				if !add(field.Invalid(path.Child("allowed").Index(j), o,
					fmt.Sprintf("one pod does not fit offering %d: %s request %g > allocatable %g", o, resourceNames[r], g.Request[r], off.Alloc[r]))) {
					return
				}
				break
			}
		}
	}
	if g.DistinctNodes < 0 || g.DistinctNodes > max(g.Count, 0) {
		add(field.Invalid(path.Child("distinctNodes"), g.DistinctNodes, fmt.Sprintf("must be in 0..count (%d)", g.Count)))
	}
	// Walk MinPerZone in zone order so the error list is stable.
	zones := make([]int, 0, len(g.MinPerZone))
	for z := range g.MinPerZone {
		zones = append(zones, z)
	}
	sort.Ints(zones)
	var sum int64
	for _, z := range zones {
		n := g.MinPerZone[z]
		zp := path.Child("minPerZone").Key(fmt.Sprint(z))
		if n < 0 || n > maxCount {
			add(field.Invalid(zp, n, fmt.Sprintf("must be in 0..%d", int64(maxCount))))
			continue
		}
		sum += int64(n)
		if n > 0 && len(g.Allowed) > 0 && !zonesAllowed[z] {
			add(field.Invalid(zp, n, fmt.Sprintf("no allowed offering is in zone %d", z)))
		}
	}
	if g.Count >= 0 && sum > int64(g.Count) {
		add(field.Invalid(path.Child("minPerZone"), sum, fmt.Sprintf("zone minimums add up to %d, more than count %d", sum, g.Count)))
	}
}

func finiteNonNeg(v float64) bool {
	return v >= 0 && !math.IsInf(v, 1) // NaN fails v >= 0
}
