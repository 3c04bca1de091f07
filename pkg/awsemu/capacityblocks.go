package awsemu

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Capacity Blocks (EC2 Capacity Blocks for ML): a capacity reservation of
// type capacity-block, bought from an offering for a fixed span. EC2
// terminates the block's instances from 30 minutes before its end and
// announces it 10 minutes earlier with the EventBridge event "Capacity
// Block Reservation Expiration Warning" (40 minutes before the end).
const (
	// ReservationTypeCapacityBlock is a Capacity Block's reservation type.
	ReservationTypeCapacityBlock = "capacity-block"
	// ReservationScheduled is a purchased block before its start.
	ReservationScheduled = "scheduled"
	// MarketCapacityBlock is the market type (and fleet target capacity
	// type) of launches into a Capacity Block.
	MarketCapacityBlock = "capacity-block"

	// CapacityBlockWarning is how long before a block's end the
	// expiration warning event is sent.
	CapacityBlockWarning = 40 * time.Minute
	// CapacityBlockReclaim is how long before a block's end EC2 starts
	// terminating its instances (and refuses launches into it).
	CapacityBlockReclaim = 30 * time.Minute

	// maxBlockInstances is the most instances one Capacity Block holds.
	maxBlockInstances = 64
	// maxBlockOfferings bounds the remembered offerings (the oldest half
	// is dropped when reached).
	maxBlockOfferings = 4096
)

// capacityBlockOffering is one offering DescribeCapacityBlockOfferings
// answered, kept so PurchaseCapacityBlock can buy it.
type capacityBlockOffering struct {
	ID           string
	InstanceType string
	Zone, ZoneID string
	Count        int
	Start, End   time.Time
	Hours        int
	Fee          float64
	Purchased    bool
}

// validBlockHours reports whether a Capacity Block may last h hours: in
// 1-day steps up to 14 days, in 7-day steps up to 182 days (the model's
// documentation of CapacityDurationHours).
func validBlockHours(h int64) bool {
	switch {
	case h <= 0 || h%24 != 0:
		return false
	case h <= 14*24:
		return true
	default:
		return h <= 182*24 && h%(7*24) == 0
	}
}

func (e *Emulator) describeCapacityBlockOfferings(req *request) (any, *apiError) {
	p := req.params
	typeName := p.Get("InstanceType")
	if typeName == "" {
		return nil, errMissingParameter("InstanceType")
	}
	count, aerr := p.RequiredInt("InstanceCount")
	if aerr != nil {
		return nil, aerr
	}
	hours, aerr := p.RequiredInt("CapacityDurationHours")
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeCapacityBlockOfferings")
	if aerr != nil {
		return nil, aerr
	}
	it := e.typeIndex[typeName]
	if it == nil {
		return nil, errInvalidParameterValue("InstanceType", typeName, "The instance type does not exist.")
	}
	if !it.SupportsUsageClass(MarketCapacityBlock) {
		return nil, errInvalidParameterValue("InstanceType", typeName, "The instance type is not offered as Capacity Blocks.")
	}
	if count < 1 || count > maxBlockInstances {
		return nil, errInvalidParameterValue("InstanceCount", strconv.FormatInt(count, 10), fmt.Sprintf("Expecting a value between 1 and %d.", maxBlockInstances))
	}
	if !validBlockHours(hours) {
		return nil, errInvalidParameterValue("CapacityDurationHours", strconv.FormatInt(hours, 10),
			"The duration must be 1 to 14 days in 1-day increments, or up to 182 days in 7-day increments, in hours.")
	}
	now := e.clock.Now().UTC().Truncate(time.Second)
	start := now
	if v := p.Get("StartDateRange"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, errInvalidParameterValue("StartDateRange", v, "Expecting an ISO 8601 date and time.")
		}
		if t.After(start) {
			start = t.UTC().Truncate(time.Second)
		}
	}
	end := start.Add(time.Duration(hours) * time.Hour)
	if v := p.Get("EndDateRange"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, errInvalidParameterValue("EndDateRange", v, "Expecting an ISO 8601 date and time.")
		}
		if end.After(t) {
			return describeCapacityBlockOfferingsXML{}, nil // no block fits the range
		}
	}
	price, _ := e.catalog.OnDemandPrice(e.opts.Region, typeName)
	var offers []*capacityBlockOffering
	for _, z := range e.catalog.Zones(e.opts.Region) {
		if !e.catalog.Offered(e.opts.Region, z.Name, typeName) {
			continue
		}
		o := &capacityBlockOffering{
			ID: e.newID("cb"), InstanceType: typeName, Zone: z.Name, ZoneID: z.ID, Count: int(count),
			Start: start, End: end, Hours: int(hours), Fee: price * float64(hours) * float64(count),
		}
		offers = append(offers, o)
	}
	if len(e.acct.blockOfferings)+len(offers) > maxBlockOfferings {
		e.acct.blockOfferings = append(e.acct.blockOfferings[:0], e.acct.blockOfferings[len(e.acct.blockOfferings)/2:]...)
	}
	e.acct.blockOfferings = append(e.acct.blockOfferings, offers...)
	from, to, next := pg.slice("DescribeCapacityBlockOfferings", len(offers))
	out := describeCapacityBlockOfferingsXML{NextToken: next}
	for _, o := range offers[from:to] {
		out.Offerings.Items = append(out.Offerings.Items, capacityBlockOfferingXML{
			ID: o.ID, InstanceType: o.InstanceType, AvailabilityZone: o.Zone, InstanceCount: o.Count,
			StartDate: o.Start.Format(ec2Time), EndDate: o.End.Format(ec2Time), DurationHours: o.Hours,
			UpfrontFee: strconv.FormatFloat(o.Fee, 'f', 2, 64), CurrencyCode: "USD", Tenancy: "default",
		})
	}
	return out, nil
}

func (e *Emulator) purchaseCapacityBlock(req *request) (any, *apiError) {
	p := req.params
	id := p.Get("CapacityBlockOfferingId")
	if id == "" {
		return nil, errMissingParameter("CapacityBlockOfferingId")
	}
	platform := p.Get("InstancePlatform")
	if platform == "" {
		return nil, errMissingParameter("InstancePlatform")
	}
	var o *capacityBlockOffering
	for _, c := range e.acct.blockOfferings {
		if c.ID == id {
			o = c
		}
	}
	if o == nil {
		return nil, errInvalidParameterValue("CapacityBlockOfferingId", id, "The Capacity Block offering does not exist.")
	}
	if o.Purchased {
		return nil, errInvalidParameterValue("CapacityBlockOfferingId", id, "The Capacity Block offering was already purchased.")
	}
	now := e.clock.Now().UTC().Truncate(time.Second)
	if !o.End.Add(-CapacityBlockReclaim).After(now) {
		return nil, errInvalidParameterValue("CapacityBlockOfferingId", id, "The Capacity Block offering is no longer available.")
	}
	tags := map[string]string{}
	for _, key := range []string{"TagSpecifications", "TagSpecification"} {
		specs, aerr := parseTagSpecs(p, key)
		if aerr != nil {
			return nil, aerr
		}
		for rt, ts := range specs {
			if rt != "capacity-reservation" {
				return nil, errInvalidParameterValue("TagSpecification.ResourceType", rt, "PurchaseCapacityBlock tags only the capacity-reservation resource type.")
			}
			for k, v := range ts {
				tags[k] = v
			}
		}
	}
	o.Purchased = true
	r := &CapacityReservation{
		ID: e.newID("cr"), InstanceType: o.InstanceType, Platform: platform, Zone: o.Zone, ZoneID: o.ZoneID,
		Tenancy: "default", Total: o.Count, MatchCriteria: MatchTargeted, EndDateType: "limited", EndDate: o.End,
		StartDate: o.Start, State: ReservationActive, CreateDate: now, Type: ReservationTypeCapacityBlock,
		BlockID: e.newID("cb"), Tags: tags,
	}
	if o.Start.After(now) {
		r.State = ReservationScheduled
		e.at(o.Start, r.ID, timerBlockStart)
	}
	e.acct.reservations = append(e.acct.reservations, r)
	e.at(o.End.Add(-CapacityBlockWarning), r.ID, timerBlockWarning)
	e.at(o.End.Add(-CapacityBlockReclaim), r.ID, timerBlockReclaim)
	e.at(o.End, r.ID, timerReservationEnd)
	x := e.reservationToXML(r)
	out := purchaseCapacityBlockXML{CapacityReservation: x}
	out.CapacityBlocks.Items = append(out.CapacityBlocks.Items, capacityBlockXML{
		CapacityBlockID: r.BlockID, AvailabilityZone: r.Zone, AvailabilityZoneID: r.ZoneID,
		CapacityReservationIDs: set[valueXML]{Items: []valueXML{{Value: r.ID}}},
		StartDate:              x.StartDate, EndDate: x.EndDate, CreateDate: x.CreateDate, State: r.State, TagSet: tagSet(r.Tags),
	})
	return out, nil
}

// fireBlock applies a Capacity Block's timers. Callers hold mu.
func (e *Emulator) fireBlock(kind int, id string, now time.Time) {
	r := e.reservation(id)
	if r == nil {
		return
	}
	switch kind {
	case timerBlockStart:
		if r.State == ReservationScheduled {
			r.State = ReservationActive
		}
	case timerBlockWarning:
		if r.State == ReservationActive {
			e.blockWarning(r, now)
		}
	case timerBlockReclaim:
		e.reclaimBlock(r, now)
	}
}

// blockReclaiming reports whether a Capacity Block is within its last 30
// minutes, when it takes no launches. Callers hold mu.
func (e *Emulator) blockReclaiming(r *CapacityReservation) bool {
	return r.Type == ReservationTypeCapacityBlock && !e.clock.Now().Before(r.EndDate.Add(-CapacityBlockReclaim))
}

// reclaimBlock starts terminating every pending or running instance of a
// Capacity Block. Callers hold mu.
func (e *Emulator) reclaimBlock(r *CapacityReservation, now time.Time) {
	for _, id := range e.acct.order {
		in := e.acct.instances[id]
		if in != nil && in.CapacityReservationID == r.ID && (in.State == StatePending || in.State == StateRunning) {
			e.beginTermination(in, "Server.ScheduledStop: the Capacity Block "+r.ID+" ends", now)
		}
	}
}

// blockWarning puts EC2's "Capacity Block Reservation Expiration Warning"
// on the interruption queue (as the account's EventBridge rules would), if
// the queue exists. Callers hold mu.
func (e *Emulator) blockWarning(r *CapacityReservation, now time.Time) {
	q := e.acct.queues[e.opts.ClusterName]
	if q == nil {
		return
	}
	ev := Event{
		Version: "0", ID: uuidFrom(uint64(e.opts.Seed)^0x43424c4b, e.rng.Uint64()), Account: e.opts.AccountID,
		Time: now.UTC().Format(time.RFC3339), Region: e.opts.Region, Source: "aws.ec2",
		DetailType: "Capacity Block Reservation Expiration Warning",
		Resources:  []string{fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", e.opts.Region, e.opts.AccountID, r.ID)},
	}
	ev.Detail, _ = json.Marshal(map[string]string{"capacity-reservation-id": r.ID, "end-date": r.EndDate.Format(time.RFC3339)})
	body, err := json.Marshal(ev)
	if err != nil {
		return
	}
	e.enqueue(q, string(body), nil, 0)
}

type capacityBlockOfferingXML struct {
	ID               string `xml:"capacityBlockOfferingId"`
	InstanceType     string `xml:"instanceType"`
	AvailabilityZone string `xml:"availabilityZone"`
	InstanceCount    int    `xml:"instanceCount"`
	StartDate        string `xml:"startDate"`
	EndDate          string `xml:"endDate"`
	DurationHours    int    `xml:"capacityBlockDurationHours"`
	UpfrontFee       string `xml:"upfrontFee"`
	CurrencyCode     string `xml:"currencyCode"`
	Tenancy          string `xml:"tenancy"`
}

type describeCapacityBlockOfferingsXML struct {
	Offerings set[capacityBlockOfferingXML] `xml:"capacityBlockOfferingSet"`
	NextToken string                        `xml:"nextToken,omitempty"`
}

type capacityBlockXML struct {
	CapacityBlockID        string        `xml:"capacityBlockId"`
	AvailabilityZone       string        `xml:"availabilityZone"`
	AvailabilityZoneID     string        `xml:"availabilityZoneId"`
	CapacityReservationIDs set[valueXML] `xml:"capacityReservationIdSet"`
	StartDate              string        `xml:"startDate"`
	EndDate                string        `xml:"endDate"`
	CreateDate             string        `xml:"createDate"`
	State                  string        `xml:"state"`
	TagSet                 set[tagXML]   `xml:"tagSet"`
}

type purchaseCapacityBlockXML struct {
	CapacityReservation capacityReservationXML `xml:"capacityReservation"`
	CapacityBlocks      set[capacityBlockXML]  `xml:"capacityBlockSet"`
}
