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
	// Per offering: a dense zone id and the largest request that fits, so
	// that checking a group's allowed list is a few array reads per entry.
	v := validator{p: p, add: add}
	v.zone = make([]int32, len(p.Offerings))
	v.limit = make([][NumResources]float64, len(p.Offerings))
	zoneID := map[int]int32{}
	for i := range p.Offerings {
		o := &p.Offerings[i]
		id, ok := zoneID[o.Zone]
		if !ok {
			id = int32(len(zoneID))
			zoneID[o.Zone] = id
		}
		v.zone[i] = id
		for r, a := range o.Alloc {
			if finiteNonNeg(a) {
				v.limit[i][r] = a + fitSlack*math.Max(a, 1)
			} else {
				v.limit[i][r] = math.Inf(1) // reported above
			}
		}
	}
	v.zoneID = zoneID
	v.seen = make([]bool, len(zoneID))
	grpPath := field.NewPath("groups")
	for gi := range p.Groups {
		if len(errs) >= maxErrors {
			break
		}
		v.group(gi, grpPath.Index(gi))
	}
	if len(errs) == 0 {
		return nil
	}
	return &ProblemError{Errs: errs}
}

type validator struct {
	p      *Problem
	add    func(*field.Error) bool
	zone   []int32
	limit  [][NumResources]float64
	zoneID map[int]int32
	seen   []bool // scratch: zones with an allowed offering
}

func (v *validator) group(gi int, path *field.Path) {
	p, add := v.p, v.add
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
	needZones := len(g.MinPerZone) > 0
	if needZones {
		clear(v.seen)
	}
	req := g.Request
	for j, o := range g.Allowed {
		if o < 0 || o >= len(p.Offerings) {
			if !add(field.Invalid(path.Child("allowed").Index(j), o, fmt.Sprintf("offering index out of range 0..%d", len(p.Offerings)-1))) {
				return
			}
			continue
		}
		if needZones {
			v.seen[v.zone[o]] = true
		}
		if !reqOK {
			continue
		}
		lim := &v.limit[o]
		if req[0] <= lim[0] && req[1] <= lim[1] && req[2] <= lim[2] {
			continue
		}
		for r := range NumResources {
			if req[r] > lim[r] {
				if !add(field.Invalid(path.Child("allowed").Index(j), o,
					fmt.Sprintf("one pod does not fit offering %d: %s request %g > allocatable %g", o, resourceNames[r], req[r], p.Offerings[o].Alloc[r]))) {
					return
				}
				break
			}
		}
	}
	if g.DistinctNodes < 0 || g.DistinctNodes > max(g.Count, 0) {
		add(field.Invalid(path.Child("distinctNodes"), g.DistinctNodes, fmt.Sprintf("must be in 0..count (%d)", g.Count)))
	}
	if !needZones {
		return
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
		if id, ok := v.zoneID[z]; n > 0 && len(g.Allowed) > 0 && (!ok || !v.seen[id]) {
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
