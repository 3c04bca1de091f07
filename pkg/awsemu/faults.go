package awsemu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
)

// ICERule makes launches fail with InsufficientInstanceCapacity. An empty
// field matches anything.
type ICERule struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	// After lets this many more matching instances launch before the rule
	// refuses them (0: refuses at once); each matching launch counts it
	// down. A fleet asking for more than is left gets what is left and an
	// InsufficientInstanceCapacity error for the offering (see
	// LimitCapacity).
	After int `json:"after,omitempty"`
}

func (r ICERule) matches(instanceType, zone, capacityType string) bool {
	return (r.InstanceType == "" || r.InstanceType == instanceType) &&
		(r.Zone == "" || r.Zone == zone) &&
		(r.CapacityType == "" || r.CapacityType == capacityType)
}

// Faults is the injected fault state, as the admin API reports it.
type Faults struct {
	ICE              []ICERule `json:"ice"`
	ThrottleFraction float64   `json:"throttleFraction"`
	ThrottleSeed     int64     `json:"throttleSeed"`
	// Denied are the actions ("ec2:DescribeSpotPriceHistory") answered as
	// not authorized, sorted.
	Denied []string `json:"denied"`
	// Capacity are the spare-capacity rules set (see CapacityRule).
	Capacity []CapacityRule `json:"capacity"`
	// Instances are the instances with scheduled events or failed status
	// checks (ScheduleEvent, SetStatusCheck), in launch order.
	Instances []InstanceFaults `json:"instances,omitempty"`
}

type faultState struct {
	ice      []ICERule
	denied   map[string]bool
	fraction float64
	seed     int64
	rng      *rand.Rand
}

// throttled draws whether the next call is throttled. Callers hold mu.
func (f *faultState) throttled() bool {
	if f.fraction <= 0 || f.rng == nil {
		return false
	}
	return f.rng.Float64() < f.fraction
}

func (f *faultState) iced(instanceType, zone, capacityType string) bool {
	for _, r := range f.ice {
		if r.After == 0 && r.matches(instanceType, zone, capacityType) {
			return true
		}
	}
	return false
}

// take counts one launch of the offering against the rules that limit
// it: false (and nothing counted) when a matching rule has no launch
// left.
func (f *faultState) take(instanceType, zone, capacityType string) bool {
	if f.iced(instanceType, zone, capacityType) {
		return false
	}
	for i := range f.ice {
		if r := &f.ice[i]; r.matches(instanceType, zone, capacityType) {
			r.After--
		}
	}
	return true
}

// LimitCapacity lets n more instances of a matching (type, zone, capacity
// type) launch; after them, launches fail with
// InsufficientInstanceCapacity until ClearFaults. A fleet asking for more
// than is left launches what is left and reports the error for the
// offering (partial fulfilment). An empty argument matches anything; n <=
// 0 is InjectICE.
func (e *Emulator) LimitCapacity(instanceType, zone, capacityType string, n int) {
	if n <= 0 {
		e.InjectICE(instanceType, zone, capacityType)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults.ice = append(e.faults.ice, ICERule{InstanceType: instanceType, Zone: zone, CapacityType: capacityType, After: n})
}

// InjectICE makes every launch of a matching (type, zone, capacity type)
// fail with InsufficientInstanceCapacity until ClearFaults. An empty
// argument matches anything.
func (e *Emulator) InjectICE(instanceType, zone, capacityType string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rule := ICERule{InstanceType: instanceType, Zone: zone, CapacityType: capacityType}
	for _, r := range e.faults.ice {
		if r == rule {
			return
		}
	}
	e.faults.ice = append(e.faults.ice, rule)
	sort.Slice(e.faults.ice, func(i, j int) bool {
		a, b := e.faults.ice[i], e.faults.ice[j]
		if a.InstanceType != b.InstanceType {
			return a.InstanceType < b.InstanceType
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.CapacityType < b.CapacityType
	})
}

// SetThrottle throttles the given fraction (0..1) of all API calls from
// now on. Which calls are throttled is a pure function of seed and the
// order of calls, so a test that makes the same calls sees the same
// throttles. A fraction of 0 turns throttling off.
func (e *Emulator) SetThrottle(fraction float64, seed int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if fraction < 0 {
		fraction = 0
	}
	if fraction > 1 {
		fraction = 1
	}
	e.faults.fraction = fraction
	e.faults.seed = seed
	e.faults.rng = rand.New(rand.NewPCG(uint64(seed), 0x7468726f))
}

// ClearFaults removes every injected fault (ICE rules, throttling,
// capacity rules: spare capacity goes back to the seeded model, scheduled
// events and failed status checks).
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = faultState{}
	e.capacity = nil
	e.clearInstanceFaults()
}

// Faults returns the injected faults.
func (e *Emulator) Faults() Faults {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Faults{
		ICE:              append([]ICERule{}, e.faults.ice...),
		ThrottleFraction: e.faults.fraction,
		ThrottleSeed:     e.faults.seed,
		Capacity:         append([]CapacityRule{}, e.capacity...),
		Denied:           sortedKeys(e.faults.denied),
		Instances:        e.instanceFaults(),
	}
}

// DenyAction makes every call of action ("service:Operation", as IAM
// spells it, e.g. "ec2:DescribeSpotPriceHistory") fail as not authorized
// until ClearFaults: UnauthorizedOperation for EC2 (also for DryRun),
// AccessDenied for IAM and SQS, AccessDeniedException for the JSON
// services. The action must be one the emulator serves.
func (e *Emulator) DenyAction(action string) error {
	if !servedActions()[action] {
		return fmt.Errorf("%w: %q is not an action the emulator serves", ErrUnknownAction, action)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.faults.denied == nil {
		e.faults.denied = map[string]bool{}
	}
	e.faults.denied[action] = true
	return nil
}

// ErrUnknownAction is wrapped by DenyAction's error for an action the
// emulator does not serve.
var ErrUnknownAction = errors.New("unknown action")

func deniedError(service, action string) *apiError {
	switch service {
	case "ec2":
		return newAPIError("UnauthorizedOperation", http.StatusForbidden, "You are not authorized to perform this operation. User is not authorized to perform: %s", action)
	case "iam", "sqs":
		return newAPIError("AccessDenied", http.StatusForbidden, "User is not authorized to perform: %s", action)
	}
	return newAPIError("AccessDeniedException", http.StatusForbidden, "User is not authorized to perform: %s", action)
}

// servedActions are the "service:Operation" names the emulator answers.
func servedActions() map[string]bool {
	out := map[string]bool{"eks:DescribeCluster": true}
	// events.go, nodegroups.go and accessentries.go serve the last three.
	for svc, ops := range map[string][]string{
		"ec2": keys(ec2Ops), "iam": keys(iamOps), "ssm": keys(ssmOps), "sqs": keys(sqsOps), "pricing": keys(pricingOps),
		"events":      keys(eventsOps),
		"eks":         {"ListClusters", "ListNodegroups", "DescribeNodegroup", "CreateAccessEntry", "ListAccessEntries", "DescribeAccessEntry"},
		"autoscaling": {"DescribeAutoScalingGroups"},
	} {
		for _, op := range ops {
			out[svc+":"+op] = true
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
