package aws

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// ReservedPriceFactor is the share of the on-demand price a reserved
// offering is priced at. A reservation is paid for whether it is used or
// not, so its marginal price is about zero; a small positive share keeps
// the order among reserved offerings by size and makes every plan prefer
// a reservation with room over any paid capacity.
const ReservedPriceFactor = 1e-4

// reservationTTL is how long DescribeCapacityReservations' available
// counts are used before they are asked again; launches into a
// reservation in the meantime are subtracted locally.
const reservationTTL = 15 * time.Second

// reservationCounts caches the available instance counts of capacity
// reservations. It is safe for concurrent use.
type reservationCounts struct {
	mu      sync.Mutex
	avail   map[string]int       // by reservation id
	fetched map[string]time.Time // by reservation id
}

// available returns the available counts of the reservations, asking
// EC2 for those not asked within reservationTTL. A reservation EC2 does
// not know or that is no longer active counts 0.
func (p *Provider) reservationAvailable(ctx context.Context, ids []string) map[string]int {
	rc := p.reservations
	now := p.o.Clock.Now()
	rc.mu.Lock()
	var stale []string
	for _, id := range ids {
		if t, ok := rc.fetched[id]; !ok || now.Sub(t) >= reservationTTL {
			stale = append(stale, id)
		}
	}
	rc.mu.Unlock()
	if len(stale) > 0 {
		got := map[string]int{}
		out, err := p.clients.EC2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: stale})
		if err != nil {
			// An id gone from EC2 fails the whole call: ask one by one.
			for _, id := range stale {
				one, err := p.clients.EC2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
				if err == nil {
					out = &ec2.DescribeCapacityReservationsOutput{CapacityReservations: append(out.CapacityReservations, one.CapacityReservations...)}
				} else if out == nil {
					out = &ec2.DescribeCapacityReservationsOutput{}
				}
			}
		}
		for _, cr := range out.CapacityReservations {
			if cr.State == "active" {
				got[aws.ToString(cr.CapacityReservationId)] = int(aws.ToInt32(cr.AvailableInstanceCount))
			}
		}
		rc.mu.Lock()
		for _, id := range stale {
			rc.avail[id] = got[id]
			rc.fetched[id] = now
		}
		rc.mu.Unlock()
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	res := make(map[string]int, len(ids))
	for _, id := range ids {
		res[id] = rc.avail[id]
	}
	return res
}

// launchedInto takes one instance off a reservation's cached count.
func (p *Provider) launchedInto(id string) {
	rc := p.reservations
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.avail[id] > 0 {
		rc.avail[id]--
	}
}

// withReserved adds to the node class's instance types an offering of
// capacity type reserved for each of its resolved capacity reservations
// (status.capacityReservations) of the type in a zone the type is offered
// in: the reservation's id and type (default or capacity-block), its
// available count, available while it has room, is not marked unavailable
// and, for a Capacity Block, is not expiring. Types without a reservation
// are returned as they are; the others are copies.
func (p *Provider) withReserved(ctx context.Context, nc *awsv1.EC2NodeClass, types []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	crs := nc.Status.CapacityReservations
	if len(crs) == 0 || p.o.NoReservedCapacity {
		return types
	}
	ids := make([]string, 0, len(crs))
	byType := map[string][]awsv1.CapacityReservation{}
	for _, cr := range crs {
		ids = append(ids, cr.ID)
		byType[cr.InstanceType] = append(byType[cr.InstanceType], cr)
	}
	avail := p.reservationAvailable(ctx, ids)
	now := p.o.Clock.Now()
	out := make([]*cloudprovider.InstanceType, len(types))
	for i, it := range types {
		out[i] = it
		rs := byType[it.Name]
		if len(rs) == 0 {
			continue
		}
		offs := slices.Clone(it.Offerings)
		for _, cr := range rs {
			if cr.Interruptible {
				continue // not supported yet (docs/aws.md)
			}
			var od *cloudprovider.Offering
			for j := range it.Offerings {
				if o := &it.Offerings[j]; o.Zone == cr.AvailabilityZone && o.CapacityType == cloudprovider.CapacityTypeOnDemand {
					od = o
				}
			}
			if od == nil {
				continue // no subnet of the class in its zone, or not sold there
			}
			typ := cr.ReservationType
			if typ == "" {
				typ = nodeclass.ReservationTypeDefault
			}
			n := avail[cr.ID]
			key := cloudprovider.OfferingKey{InstanceType: it.Name, Zone: cr.AvailabilityZone, CapacityType: cloudprovider.CapacityTypeReserved}
			offs = append(offs, cloudprovider.Offering{
				Zone: cr.AvailabilityZone, ZoneID: od.ZoneID, CapacityType: cloudprovider.CapacityTypeReserved,
				Price:         od.Price * ReservedPriceFactor,
				Available:     n > 0 && !p.types.Unavailable().IsUnavailable(key) && !nodeclass.Expiring(cr, now),
				ReservationID: cr.ID, ReservationType: typ, ReservedCapacity: n,
			})
		}
		c := *it
		c.Offerings = offs
		out[i] = &c
	}
	return out
}
