package engine

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
)

// CommitmentLedger starts a ledger of in.Commitments and lets the
// existing on-demand nodes (marked for deletion too: they still run) and
// the in-flight on-demand NodeClaims take their part, in name order
// (commitment.Account). It returns what is left (nil when nothing is
// committed) and the coverage of each covered node or claim by name; the
// disruption planner prices existing nodes with the same coverage.
//
// A node's price is its PricePerHour, else its offering's in any pool;
// a node whose type or price is unknown takes nothing.
func CommitmentLedger(in *Input) (*commitment.Ledger, map[string]commitment.Coverage) {
	l := commitment.NewLedger(in.Commitments)
	if l == nil {
		return nil, map[string]commitment.Coverage{}
	}
	var uses []commitment.Use
	add := func(name, it, zone, region string, price float64) {
		if it == "" {
			return
		}
		if !validPrice(price) {
			price = offeringListPrice(in, it, zone)
		}
		if !validPrice(price) {
			return
		}
		if region == "" {
			region = in.Region
		}
		uses = append(uses, commitment.Use{Name: name, Usage: commitment.Usage{InstanceType: it, Zone: zone, Region: region, PricePerHour: price}})
	}
	for i := range in.Nodes {
		en := &in.Nodes[i]
		if en.Node == nil {
			continue
		}
		lb := en.Node.Labels
		ct := lb[labelCapacityType]
		if ct == "" && lb["eks.amazonaws.com/capacityType"] == "ON_DEMAND" {
			ct = cloudprovider.CapacityTypeOnDemand
		}
		if ct != cloudprovider.CapacityTypeOnDemand {
			continue
		}
		add(en.Node.Name, lb[labelInstanceType], lb[labelZone], lb[labelRegion], en.PricePerHour)
	}
	for i := range in.InFlight {
		c := &in.InFlight[i]
		if !single(c, labelCapacityType, cloudprovider.CapacityTypeOnDemand) || len(c.InstanceTypeOptions) == 0 {
			continue
		}
		zone := ""
		if r := c.Requirements.Get(labelZone); r != nil && r.IsFinite() && len(r.Values()) == 1 {
			zone = r.Values()[0]
		}
		// A claim a commitment covered carries its marginal price: count
		// it at its offering's.
		add(c.Name, c.InstanceTypeOptions[0], zone, "", offeringListPrice(in, c.InstanceTypeOptions[0], zone))
	}
	cov := commitment.Account(l, uses)
	return l, cov
}

// single reports whether the claim's requirement on key allows exactly v.
func single(c *InFlightNodeClaim, key, v string) bool {
	r := c.Requirements.Get(key)
	if r == nil || !r.IsFinite() {
		return false
	}
	vals := r.Values()
	return len(vals) == 1 && vals[0] == v
}

// offeringListPrice is the on-demand price of a type in a zone (the
// cheapest zone when zone is ""), from the first pool that offers it; 0
// when none does.
func offeringListPrice(in *Input, it, zone string) float64 {
	best := 0.0
	for i := range in.NodePools {
		for _, t := range in.NodePools[i].InstanceTypes {
			if t == nil || t.Name != it {
				continue
			}
			for _, o := range t.Offerings {
				if o.CapacityType == cloudprovider.CapacityTypeOnDemand && (zone == "" || o.Zone == zone) && validPrice(o.Price) &&
					(best == 0 || o.Price < best) {
					best = o.Price
				}
			}
		}
		if best > 0 {
			return best
		}
	}
	return best
}

// cover decides a new claim whose cheapest offering off a commitment
// could cover: when one covers its first option whole (taken off led),
// the claim is pinned to on-demand (and to the zone of a zonal
// Reserved Instance), its options cut to those the same commitment
// covers, and it is priced at the covered price; otherwise it is planned
// as without commitments: the cheaper of its other capacity types and
// on-demand at the list price.
func (s *solver) cover(n *snode, opts []*ctype, off coff, led *commitment.Ledger) ([]*ctype, coff, string) {
	zone := s.zones[off.zone].name
	u := commitment.Usage{InstanceType: opts[0].name, Zone: zone, Region: s.in.Region, PricePerHour: off.list}
	if c := led.Take(u); c.Commitment != "" {
		n.cts = 1 << uint(ctOnDemand)
		kept := opts[:0:0]
		for _, t := range opts {
			if o, ok := t.cheapest(n.zones, n.cts); ok && o.cov &&
				led.Covers(c.Commitment, commitment.Usage{InstanceType: t.name, Zone: s.zones[o.zone].name, Region: s.in.Region, PricePerHour: o.list}) {
				kept = append(kept, t)
			}
		}
		if !led.Covers(c.Commitment, commitment.Usage{InstanceType: opts[0].name, Zone: "", Region: s.in.Region}) {
			// A zonal Reserved Instance: the node must land in its zone.
			n.zones = 1 << uint(off.zone)
			kept = kept[:0]
			for _, t := range opts {
				if o, ok := t.cheapest(n.zones, n.cts); ok && o.cov && led.Covers(c.Commitment, commitment.Usage{InstanceType: t.name, Zone: zone, Region: s.in.Region}) {
					kept = append(kept, t)
				}
			}
		}
		if len(kept) == 0 {
			kept = opts[:1]
		}
		return kept, off, c.Commitment
	}
	// Not covered: the other capacity types, or on-demand at its list
	// price, whichever is cheaper.
	list := off.list
	cts := n.cts
	n.cts &^= 1 << uint(ctOnDemand)
	if n.cts != 0 {
		if alt := s.options(n); len(alt) > 0 {
			if o, ok := alt[0].cheapest(n.zones, n.cts); ok && o.price <= list {
				return alt, o, ""
			}
		}
	}
	n.cts = cts
	return s.byListPrice(n, opts)
}

// byListPrice orders a claim's options by their cheapest offering's list
// price (no commitment left to cover them) and returns that offering.
func (s *solver) byListPrice(n *snode, opts []*ctype) ([]*ctype, coff, string) {
	type opt struct {
		t   *ctype
		off coff
	}
	out := make([]opt, 0, len(opts))
	for _, t := range opts {
		best, ok := coff{}, false
		for _, o := range t.offs {
			if n.zones.has(o.zone) && n.cts.has(o.ct) && (!ok || o.list < best.list) {
				best, ok = o, true
			}
		}
		if ok {
			best.price, best.cov = best.list, false
			out = append(out, opt{t, best})
		}
	}
	slices.SortStableFunc(out, func(a, b opt) int {
		if c := cmp.Compare(a.off.price, b.off.price); c != 0 {
			return c
		}
		return strings.Compare(a.t.name, b.t.name)
	})
	res := make([]*ctype, len(out))
	for i := range out {
		res[i] = out[i].t
	}
	return res, out[0].off, ""
}
