package aws

import (
	"math"
	"sync"
	"time"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// subnets picks the subnet of each zone a launch uses: the one with the
// most free addresses, as last described (the EC2NodeClass controller
// describes a class's subnets every minute and reports the counts here),
// less the launches in flight in it and those done since it was described.
// A subnet EC2 reports full (InsufficientFreeAddressesInSubnet) counts as
// having none until it is described again. Ties go to the lowest id, and a
// subnet never described counts as having plenty, so with one subnet per
// zone, or before any description, the choice is the lowest id.
type subnets struct {
	mu sync.Mutex
	// free is the last described AvailableIpAddressCount and when the
	// description was asked for.
	free map[string]described
	// inflight counts launches under way that may use the subnet.
	inflight map[string]int
	// launched are the times launches finished with an instance in the
	// subnet, not yet known to be in free's count.
	launched map[string][]time.Time
}

type described struct {
	count int64
	at    time.Time
}

// unknownFree is the free count of a subnet never described.
const unknownFree = math.MaxInt32

func newSubnets() *subnets {
	return &subnets{free: map[string]described{}, inflight: map[string]int{}, launched: map[string][]time.Time{}}
}

// observe records free address counts described at at (when the request
// was made): launches finished before it are in the counts.
func (s *subnets) observe(at time.Time, free map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, n := range free {
		if d, ok := s.free[id]; ok && d.at.After(at) {
			continue
		}
		s.free[id] = described{count: n, at: at}
		kept := s.launched[id][:0]
		for _, t := range s.launched[id] {
			if !t.Before(at) {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			delete(s.launched, id)
		} else {
			s.launched[id] = kept
		}
	}
}

// full records that EC2 found no free address in the subnet at now.
func (s *subnets) full(id string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free[id] = described{count: 0, at: now}
	delete(s.launched, id)
}

// availableLocked is the subnet's free addresses less what is in flight
// and launched since described. Callers hold mu.
func (s *subnets) availableLocked(id string) int64 {
	d, ok := s.free[id]
	n := int64(unknownFree)
	if ok {
		n = d.count
	}
	return n - int64(s.inflight[id]) - int64(len(s.launched[id]))
}

// pick chooses one subnet per zone among candidates (skipping those in
// skip): the most available addresses, then the lowest id. A zone whose
// subnets all have none available keeps the one with the most (EC2 has the
// last word: its answer marks the subnet full). It counts a launch in
// flight in each chosen subnet; the caller ends it with done.
func (s *subnets) pick(candidates []awsv1.Subnet, skip map[string]bool) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := map[string]string{}
	for _, c := range candidates {
		if skip[c.ID] {
			continue
		}
		cur, ok := best[c.Zone]
		if !ok {
			best[c.Zone] = c.ID
			continue
		}
		a, b := s.availableLocked(c.ID), s.availableLocked(cur)
		if a > b || (a == b && c.ID < cur) {
			best[c.Zone] = c.ID
		}
	}
	for _, id := range best {
		s.inflight[id]++
	}
	return best
}

// done ends the launch pick counted: launched is the subnet the instance
// went to ("" when none), at when the launch answered.
func (s *subnets) done(picked map[string]string, launched string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range picked {
		if s.inflight[id]--; s.inflight[id] <= 0 {
			delete(s.inflight, id)
		}
	}
	if launched != "" {
		s.launched[launched] = append(s.launched[launched], at)
	}
}

// hasOther says whether the zone has a subnet among candidates besides
// those in skip.
func hasOther(candidates []awsv1.Subnet, zone string, skip map[string]bool) bool {
	for _, c := range candidates {
		if c.Zone == zone && !skip[c.ID] {
			return true
		}
	}
	return false
}
