package engine

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
)

// compileCache holds what compiling one pool can reuse from another in the
// same compile: a type's labels and allocatable, its usable offerings per
// offering filter, its daemonset-reduced variants and its capacity in a
// list of limited resources. With it, thousands of pools that each allow a
// different subset of types cost one small record per (pool, type) and one
// shared record per (type, filter).
type compileCache struct {
	unavailable map[OfferingKey]bool
	labels      map[*cloudprovider.InstanceType]map[string]string
	alloc       map[*cloudprovider.InstanceType]rvec
	filters     map[string]int
	shares      map[shareKey]*tshare
	daemons     map[daemonKey]*tshare
	caps        map[capKey][]int64
}

// shareKey names what a type's usable offerings depend on in a pool: the
// type, the capacity types the pool allows and its zone, zone-id and
// reservation requirements (interned by filterOf).
type shareKey struct {
	it     *cloudprovider.InstanceType
	filter int
}

type daemonKey struct {
	base *tshare
	ds   rvec
}

type capKey struct {
	it     *cloudprovider.InstanceType
	limits string
}

// filterOf interns what in np filters a type's offerings.
func (cc *compileCache) filterOf(np *NodePool, cts ctmask) int {
	var b strings.Builder
	b.WriteByte(byte(cts))
	for _, k := range []string{labelZone, labelZoneID, labelReservationID, labelReservationType} {
		b.WriteByte(0)
		if r := np.Requirements.Get(k); r != nil {
			b.WriteString(r.String())
		}
	}
	if cc.filters == nil {
		cc.filters = map[string]int{}
	}
	f := b.String()
	id, ok := cc.filters[f]
	if !ok {
		id = len(cc.filters)
		cc.filters[f] = id
	}
	return id
}

// labelsOf is the type's labels, with its instance-type label added when
// the catalog left it out.
func (cc *compileCache) labelsOf(it *cloudprovider.InstanceType) map[string]string {
	if _, ok := it.Labels[labelInstanceType]; ok {
		return it.Labels
	}
	if l, ok := cc.labels[it]; ok {
		return l
	}
	l := make(map[string]string, len(it.Labels)+1)
	for k, v := range it.Labels {
		l[k] = v
	}
	l[labelInstanceType] = it.Name
	if cc.labels == nil {
		cc.labels = map[*cloudprovider.InstanceType]map[string]string{}
	}
	cc.labels[it] = l
	return l
}

// typeShare is it as np may launch it before daemonsets: its usable
// offerings (cheapest first), zones, capacity types and least price. A
// share with no offerings means the pool cannot launch the type.
func (s *solver) typeShare(cc *compileCache, it *cloudprovider.InstanceType, np *NodePool, cts ctmask, filter int) *tshare {
	key := shareKey{it: it, filter: filter}
	if sh, ok := cc.shares[key]; ok {
		return sh
	}
	t := &tshare{it: it, name: it.Name, labels: cc.labelsOf(it), minPrice: math.Inf(1)}
	if cc.shares == nil {
		cc.shares = map[shareKey]*tshare{}
	}
	cc.shares[key] = t
	zoneReq := np.Requirements.Get(labelZone)
	zoneIDReq := np.Requirements.Get(labelZoneID)
	resIDReq, resTypeReq := np.Requirements.Get(labelReservationID), np.Requirements.Get(labelReservationType)
	for _, o := range it.Offerings {
		c := ctIndex(o.CapacityType)
		if c < 0 || !cts.has(c) || !o.Available || !(o.Price >= 0) || math.IsInf(o.Price, 1) {
			continue
		}
		if !zoneReq.Has(o.Zone) {
			continue
		}
		if zoneIDReq != nil && !(o.ZoneID == "" && zoneIDReq.AllowsAbsent() || o.ZoneID != "" && zoneIDReq.Has(o.ZoneID)) {
			continue
		}
		if !offeringValuePasses(resIDReq, o.ReservationID) || !offeringValuePasses(resTypeReq, o.ReservationType) {
			continue
		}
		if cc.unavailable[OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] {
			continue
		}
		z, ok := s.zoneIdx[o.Zone]
		if !ok {
			continue
		}
		off := coff{zone: z, ct: c, price: o.Price, res: o.ReservationID, list: o.Price}
		if c == ctOnDemand && s.ledger.CanCover(commitment.Usage{InstanceType: it.Name, Zone: o.Zone, Region: s.in.Region, PricePerHour: o.Price}) {
			off.price, off.cov = o.Price*commitment.PriceFactor, true
		}
		t.offs = append(t.offs, off)
		if c == ctReserved && o.ReservationID != "" {
			if s.reservedRoom == nil {
				s.reservedRoom = map[string]int{}
			}
			s.reservedRoom[o.ReservationID] = o.ReservedCapacity
		}
		t.zones |= 1 << uint(z)
		t.cts |= 1 << uint(c)
		t.minPrice = math.Min(t.minPrice, off.price)
	}
	if len(t.offs) == 0 {
		return t
	}
	t.offs = slices.Clip(t.offs)
	slices.SortStableFunc(t.offs, func(a, b coff) int {
		if c := cmp.Compare(a.price, b.price); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ct, b.ct); c != 0 {
			return c
		}
		return strings.Compare(s.zones[a.zone].name, s.zones[b.zone].name)
	})
	alloc, ok := cc.alloc[it]
	if !ok {
		alloc = s.res.vec(it.Allocatable())
		if cc.alloc == nil {
			cc.alloc = map[*cloudprovider.InstanceType]rvec{}
		}
		cc.alloc[it] = alloc
	}
	t.alloc = alloc
	return t
}

// withDaemons is base with ds of daemonset overhead taken from what pods
// may use.
func (cc *compileCache) withDaemons(base *tshare, ds rvec) *tshare {
	key := daemonKey{base: base, ds: ds}
	if sh, ok := cc.daemons[key]; ok {
		return sh
	}
	sh := *base
	sh.ds = ds
	sh.alloc = base.alloc.sub(ds)
	if cc.daemons == nil {
		cc.daemons = map[daemonKey]*tshare{}
	}
	cc.daemons[key] = &sh
	return &sh
}

// capLimitOf is it's capacity in each of a pool's limited resources
// (limits, named in order by key; the nodes limit counts one).
func (cc *compileCache) capLimitOf(it *cloudprovider.InstanceType, key string, limits []limitEntry, nodesLimit int) []int64 {
	ck := capKey{it: it, limits: key}
	if c, ok := cc.caps[ck]; ok {
		return c
	}
	c := make([]int64, len(limits))
	for i, e := range limits {
		if i == nodesLimit {
			c[i] = 1
			continue
		}
		if q, ok := it.Capacity[e.name]; ok {
			c[i] = quantityValue(e.name, &q)
		}
	}
	if cc.caps == nil {
		cc.caps = map[capKey][]int64{}
	}
	cc.caps[ck] = c
	return c
}
