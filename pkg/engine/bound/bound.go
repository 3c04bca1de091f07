package bound

// Resource indices into Offering.Alloc and Group.Request.
const (
	CPU    = 0 // millicores
	Memory = 1 // bytes
	Pods   = 2 // pod slots
)

// NumResources is the length of Offering.Alloc and Group.Request.
const NumResources = 3

// Offering is one purchasable node shape: an instance type in one zone at one
// capacity type.
type Offering struct {
	// Price is the node's cost in $/h.
	Price float64
	// Alloc is what pods may use on one node, indexed by CPU, Memory and Pods
	// (millicores, bytes, pod slots), already net of the per-node daemonset
	// overhead.
	Alloc [NumResources]float64
	// Zone is the zone index, the key of Group.MinPerZone.
	Zone int
}

// Group is a class of identical pods.
type Group struct {
	// Count is the number of pods in the group.
	Count int
	// Request is what one pod asks for, indexed like Offering.Alloc.
	Request [NumResources]float64
	// Allowed lists the indices into Problem.Offerings the pods may run on.
	// A single pod must fit each of them. Order and duplicates do not matter.
	Allowed []int
	// MinPerZone optionally maps a zone index to the number of the group's
	// pods that must run in that zone (what zone topology spread forces).
	MinPerZone map[int]int
	// DistinctNodes is how many of the group's pods need pairwise-distinct
	// nodes (hard hostname anti-affinity, or hostname spread with maxSkew 1).
	// 0 and 1 mean no such need.
	DistinctNodes int
}

// Problem is the input of Solve. Solve does not modify it.
type Problem struct {
	Offerings []Offering
	Groups    []Group
}

// Result is what Solve proves about a Problem.
type Result struct {
	// LowerBound is in $/h and is never above the cost of any feasible
	// integral plan: a set of whole nodes of the offerings, holding every pod
	// of every group within allocatable, on allowed offerings, meeting every
	// MinPerZone and DistinctNodes.
	LowerBound float64
	// Converged reports that the strengthened relaxation was solved: a
	// fractional solution meeting all of its constraints, of cost LPValue,
	// is within Options.Tolerance of LowerBound. When false (a budget ran
	// out, or clustered mode for large inputs solved a coarser relaxation;
	// see the package documentation), LowerBound is still valid, just
	// possibly less tight.
	Converged bool
	// LPValue is the cost of that fractional solution when Converged, else 0.
	LPValue float64
	// Relaxation is the fractional relaxation's proven bound, within
	// Tolerance of LPValue when Converged. LowerBound is at least that, and
	// more where integral pricing or the whole-node covering proved more
	// (see the package documentation), so it may exceed LPValue.
	Relaxation float64
	// Configuration reports that the integral pricing phase ran and solved
	// the configuration LP (over whole-pod node loads) to the tolerance.
	Configuration bool
	// Rounds is the number of column generation rounds (pricing passes).
	Rounds int
	// Pivots is the number of simplex pivots in the master.
	Pivots int
	// PricingSolves is the number of exact single-node pricing LPs solved
	// (the others were bounded from remembered resource prices).
	PricingSolves int
	// Columns is the number of node loads generated.
	Columns int
	// Rows is the number of constraints the master ended with (the rest
	// were never violated).
	Rows int
	// Groups and Offerings are the sizes after reduction (merged groups,
	// offerings left once dominated and duplicate ones are dropped).
	Groups, Offerings int
	// PodPrices holds, per input group (same index as Problem.Groups), the
	// price in $/h the proof assigns to one pod of the group (its dual value,
	// zone and presence terms excluded). Merged groups share it; it is 0 for
	// groups with Count 0.
	PodPrices []float64
}

// Options tune Solve. The zero value means the defaults.
type Options struct {
	// MaxRounds caps the column generation rounds. Default 300.
	MaxRounds int
	// MaxPivots caps the master's simplex pivots, the bulk of the work.
	// Default 15000 (the reference workloads converge in 2000-5000). An
	// internal cap on the master's work applies as well.
	MaxPivots int
	// Tolerance is the relative gap between LPValue and LowerBound at which
	// Solve stops. Default 1e-6.
	Tolerance float64
}

const (
	defaultMaxRounds = 300
	defaultMaxPivots = 15000
	defaultTolerance = 1e-6
	// safetyShrink scales the proven bound down before it is returned, so that
	// floating point rounding in the dual arithmetic cannot lift it above the
	// true optimum (the rounding is many orders of magnitude smaller).
	safetyShrink = 1e-9
)

// Solve computes a lower bound on the cost of any plan for p with the
// default options. It returns an error wrapping ErrInvalidProblem (as a
// *ProblemError listing every bad field) for malformed input.
func Solve(p *Problem) (Result, error) {
	return SolveWith(p, Options{})
}

// SolveWith is Solve with explicit options.
func SolveWith(p *Problem, opts Options) (Result, error) {
	return solve(p, opts, defaultTuning())
}

func solve(p *Problem, opts Options, tun tuning) (Result, error) {
	if err := Validate(p); err != nil {
		return Result{}, err
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = defaultMaxRounds
	}
	if opts.MaxPivots <= 0 {
		opts.MaxPivots = defaultMaxPivots
	}
	if !(opts.Tolerance > 0) {
		opts.Tolerance = defaultTolerance
	}
	pr := prepare(p, tun.zoneCaps)
	res := Result{PodPrices: make([]float64, len(p.Groups))}
	res.Groups = len(pr.groups)
	res.Offerings = len(pr.offers)
	if len(pr.groups) == 0 {
		res.Converged = true
		return res, nil
	}
	s := newSolver(pr, opts, tun)
	s.run()
	res.Relaxation = max(s.best.lb*(1-safetyShrink), 0)
	res.Converged = s.converged
	if s.converged {
		res.LPValue = s.rmp.objective()
	}
	res.Pivots = s.rmp.pivots
	if s.converged && tun.integral && s.integralEligible() {
		res.Configuration = s.runIntegral()
		res.Pivots += s.rmp.pivots // the integral phase's master is a new one
	}
	res.LowerBound = max(s.best.lb*(1-safetyShrink), 0)
	if tun.cover {
		res.LowerBound = max(res.LowerBound, s.coverBound()*(1-safetyShrink))
	}
	res.Rounds = s.rounds
	res.PricingSolves = s.solves
	res.Columns = s.rmp.ncols()
	res.Rows = s.rmp.m
	for gi := range pr.groups {
		g := &pr.groups[gi]
		price := s.groupValue(g, s.best.pi) * s.best.scale
		for _, orig := range g.members {
			res.PodPrices[orig] = price
		}
	}
	return res, nil
}
