package catalog

import (
	"slices"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// InstanceTypes builds the shared instance-type model for a region: one
// cloudprovider.InstanceType per type that has at least one offering in the
// given zones, sorted by name.
//
// zones are zone names or ids of the region; nil or empty means every zone of
// the region, and names the region does not have contribute nothing. A
// (type, zone) pair yields offerings when the type is offered in the zone and
// has an on-demand price in the region: an on-demand offering at that price
// when the type supports on-demand, and a spot offering at SpotPrice when it
// supports spot. Every offering is Available; the caller marks capacity
// shortages. Capacity and Overhead follow s (see Capacity and Overhead).
//
// Each call returns fresh InstanceTypes, but maps that are the same for many
// types are shared: the Labels maps (between calls too; they never change)
// and, within one call, the SystemReserved map and, when it does not vary by
// type, the EvictionThreshold map. As cloudprovider.InstanceType says,
// values must not be modified by those who did not create them; Type.Labels
// gives a private copy.
func (c *Catalog) InstanceTypes(region string, zones []string, s KubeletSettings) []*cloudprovider.InstanceType {
	rd := c.region[region]
	if rd == nil {
		return nil
	}
	zs := c.selectZones(rd, zones)
	if len(zs) == 0 {
		return nil
	}
	r := s.resolve()
	shared := r.shared(c.types[0])
	out := make([]*cloudprovider.InstanceType, 0, len(c.types))
	// Offerings of all types share one backing array, sized for the worst
	// case (two offerings per zone), and are sliced off per type.
	var offerBuf []cloudprovider.Offering
	for i, t := range c.types {
		price := rd.prices[i]
		if price == 0 {
			continue
		}
		if cap(offerBuf)-len(offerBuf) < 2*len(zs) {
			offerBuf = make([]cloudprovider.Offering, 0, 2*len(zs)*64)
		}
		start := len(offerBuf)
		for _, z := range zs {
			if !z.offered.Has(i) {
				continue
			}
			if t.OnDemandSupported {
				offerBuf = append(offerBuf, cloudprovider.Offering{
					Zone: z.Name, ZoneID: z.ID, CapacityType: cloudprovider.CapacityTypeOnDemand, Price: price, Available: true,
				})
			}
			if t.SpotSupported {
				offerBuf = append(offerBuf, cloudprovider.Offering{
					Zone: z.Name, ZoneID: z.ID, CapacityType: cloudprovider.CapacityTypeSpot,
					Price: SpotPrice(region, z.Name, t.Name, price), Available: true,
				})
			}
		}
		if len(offerBuf) == start {
			continue
		}
		capacity := t.capacity(r)
		out = append(out, &cloudprovider.InstanceType{
			Name:      t.Name,
			Labels:    t.labels,
			Capacity:  capacity,
			Overhead:  t.overhead(r, capacity, shared),
			Offerings: cloudprovider.Offerings(offerBuf[start:len(offerBuf):len(offerBuf)]),
		})
	}
	return out
}

// selectZones resolves names or ids to the region's zones, without
// duplicates, in name order.
func (c *Catalog) selectZones(rd *regionData, zones []string) []zoneData {
	if len(zones) == 0 {
		return rd.zones
	}
	var idx []int
	for _, z := range zones {
		if i, ok := rd.byKey[z]; ok && !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	out := make([]zoneData, len(idx))
	for j, i := range idx {
		out[j] = rd.zones[i]
	}
	return out
}
