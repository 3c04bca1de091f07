package awsemu

import (
	"fmt"
	"hash/fnv"
	"sort"
)

// The capacity model: every offering (instance type, zone, capacity type)
// has a spare-capacity score, a whole number from 0 to MaxSpareCapacity.
// It is what EC2's capacity-aware allocation strategies look at
// (price-capacity-optimized, capacity-optimized and
// capacity-optimized-prioritized choose among offerings by it); it does
// not make launches fail (ICE rules do that) and launches do not use it
// up. Unless set, an offering's score is a pure function of the
// emulator's seed and the offering, so a test sees the same model on
// every run; SetCapacity (admin API POST /_dovetail/capacity, `dovetail
// local fault capacity`) overrides it.

// MaxSpareCapacity is the largest spare-capacity score.
const MaxSpareCapacity = 100

// CapacityRule sets the spare-capacity score of the offerings it matches
// (an empty field matches anything). Later rules win.
type CapacityRule struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	Spare        int    `json:"spare"`
}

func (r CapacityRule) matches(instanceType, zone, capacityType string) bool {
	return ICERule{InstanceType: r.InstanceType, Zone: r.Zone, CapacityType: r.CapacityType}.matches(instanceType, zone, capacityType)
}

// validate checks a rule's fields.
func (r CapacityRule) validate() error {
	if r.CapacityType != "" && r.CapacityType != "spot" && r.CapacityType != "on-demand" {
		return fmt.Errorf("capacityType %q: valid values are spot, on-demand (or empty for both)", r.CapacityType)
	}
	if r.Spare < 0 || r.Spare > MaxSpareCapacity {
		return fmt.Errorf("spare %d: must be between 0 and %d", r.Spare, MaxSpareCapacity)
	}
	return nil
}

// seededSpare is the default score of an offering.
func seededSpare(seed int64, instanceType, zone, capacityType string) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s/%s", seed, instanceType, zone, capacityType)
	return int(splitmix(h.Sum64()) % (MaxSpareCapacity + 1))
}

// spare is an offering's score. Callers hold mu.
func (e *Emulator) spare(instanceType, zone, capacityType string) int {
	for i := len(e.capacity) - 1; i >= 0; i-- {
		if r := e.capacity[i]; r.matches(instanceType, zone, capacityType) {
			return r.Spare
		}
	}
	return seededSpare(e.opts.Seed, instanceType, zone, capacityType)
}

// SetCapacity adds a capacity rule (see CapacityRule); it returns an error
// for an unknown capacity type or a score outside 0..MaxSpareCapacity.
func (e *Emulator) SetCapacity(r CapacityRule) error {
	if err := r.validate(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.capacity = append(e.capacity, r)
	return nil
}

// SpareCapacity returns an offering's spare-capacity score.
func (e *Emulator) SpareCapacity(instanceType, zone, capacityType string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.spare(instanceType, zone, capacityType)
}

// CapacityRules returns the rules set so far, in the order they were set.
func (e *Emulator) CapacityRules() []CapacityRule {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]CapacityRule{}, e.capacity...)
}

// FleetRequest is what one CreateFleet call asked for and what it got, as
// recorded by the emulator (for tests and `GET /_dovetail/fleets`).
type FleetRequest struct {
	FleetID string `json:"fleetId"`
	// CapacityType is the default target capacity type.
	CapacityType string `json:"capacityType"`
	// AllocationStrategy is the strategy for that capacity type as sent
	// ("" when the request left it unset), and Applied the one used.
	AllocationStrategy string          `json:"allocationStrategy,omitempty"`
	Applied            string          `json:"applied"`
	Overrides          []FleetOverride `json:"overrides"`
	// InstanceType and Zone were launched ("" when nothing launched).
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
}

// FleetOverride is one override of a fleet request, per candidate subnet.
type FleetOverride struct {
	LaunchTemplateID string  `json:"launchTemplateId"`
	InstanceType     string  `json:"instanceType"`
	SubnetID         string  `json:"subnetId"`
	Zone             string  `json:"zone"`
	Priority         float64 `json:"priority,omitempty"`
}

// FleetRequests returns every CreateFleet request recorded, oldest first.
func (e *Emulator) FleetRequests() []FleetRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]FleetRequest, len(e.fleetLog))
	for i, f := range e.fleetLog {
		out[i] = f
		out[i].Overrides = append([]FleetOverride(nil), f.Overrides...)
	}
	return out
}

// chooseCandidate applies the allocation strategy to the launchable
// candidates (all with errCode ""), returning the one to launch:
//
//   - lowest-price (the default) and diversified (one instance): the
//     cheapest;
//   - price-capacity-optimized: among those priced within 10% of the
//     cheapest, the one with the most spare capacity;
//   - capacity-optimized: the most spare capacity;
//   - capacity-optimized-prioritized: the most spare capacity, then the
//     lowest priority number;
//   - prioritized (on-demand): the lowest priority number, then the
//     cheapest.
//
// Remaining ties go by price, instance type name, zone, then request
// order.
func (e *Emulator) chooseCandidate(cands []*fleetCandidate, strategy, capType string) *fleetCandidate {
	if len(cands) == 0 {
		return nil
	}
	for _, c := range cands {
		c.spare = e.spare(c.instanceType.Name, c.subnet.Zone.Name, capType)
	}
	sort.SliceStable(cands, func(i, j int) bool { return lessCandidate(cands[i], cands[j]) })
	cheapest := cands[0]
	best := cheapest
	prio := func(c *fleetCandidate) float64 { return c.priority }
	for _, c := range cands[1:] {
		switch strategy {
		case "price-capacity-optimized":
			if c.price <= cheapest.price*1.1 && c.spare > best.spare {
				best = c
			}
		case "capacity-optimized":
			if c.spare > best.spare {
				best = c
			}
		case "capacity-optimized-prioritized":
			if c.spare > best.spare || (c.spare == best.spare && prio(c) < prio(best)) {
				best = c
			}
		case "prioritized":
			if prio(c) < prio(best) {
				best = c
			}
		}
	}
	return best
}
