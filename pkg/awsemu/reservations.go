package awsemu

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Capacity reservation states, match criteria and launch preferences as
// EC2 names them.
const (
	ReservationActive    = "active"
	ReservationCancelled = "cancelled"
	ReservationExpired   = "expired"

	MatchOpen     = "open"
	MatchTargeted = "targeted"

	// ReservationTypeDefault is an on-demand capacity reservation (ODCR).
	ReservationTypeDefault = "default"

	prefOpen = "open"
	prefNone = "none"
	prefOnly = "capacity-reservations-only"
)

// CapacityReservation is a snapshot of one emulated on-demand capacity
// reservation.
type CapacityReservation struct {
	ID            string    `json:"id"`
	InstanceType  string    `json:"instanceType"`
	Platform      string    `json:"platform"`
	Zone          string    `json:"zone"`
	ZoneID        string    `json:"zoneId"`
	Tenancy       string    `json:"tenancy"`
	Total         int       `json:"total"`
	MatchCriteria string    `json:"instanceMatchCriteria"`
	EndDateType   string    `json:"endDateType"`
	EndDate       time.Time `json:"endDate,omitzero"`
	State         string    `json:"state"`
	CreateDate    time.Time `json:"createDate"`
	// StartDate is when a Capacity Block starts (zero: CreateDate).
	StartDate time.Time `json:"startDate,omitzero"`
	Type      string    `json:"reservationType"`
	// BlockID is a Capacity Block's id (cb-...), "" for an ODCR.
	BlockID string            `json:"capacityBlockId,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// usedBy counts the reservation's instances that hold its capacity
// (pending and running; a stopped or terminated instance releases it).
// Callers hold mu.
func (e *Emulator) reservationUsed(id string) int {
	n := 0
	for _, in := range e.acct.instances {
		if in.CapacityReservationID == id && (in.State == StatePending || in.State == StateRunning) {
			n++
		}
	}
	return n
}

// CapacityReservations returns the account's reservations with their
// available counts, in creation order.
func (e *Emulator) CapacityReservations() (out []CapacityReservation, available []int) {
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.acct.reservations {
		out = append(out, r.clone())
		available = append(available, e.reservationAvailable(r))
	}
	return out, available
}

func (r *CapacityReservation) clone() CapacityReservation {
	c := *r
	c.Tags = cloneTags(r.Tags)
	return c
}

func (e *Emulator) reservationAvailable(r *CapacityReservation) int {
	if r.State != ReservationActive || e.blockReclaiming(r) {
		return 0
	}
	return max(r.Total-e.reservationUsed(r.ID), 0)
}

func (e *Emulator) reservation(id string) *CapacityReservation {
	for _, r := range e.acct.reservations {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func (e *Emulator) createCapacityReservation(req *request) (any, *apiError) {
	p := req.params
	typeName := p.Get("InstanceType")
	if typeName == "" {
		return nil, errMissingParameter("InstanceType")
	}
	platform := p.Get("InstancePlatform")
	if platform == "" {
		return nil, errMissingParameter("InstancePlatform")
	}
	count, aerr := p.RequiredInt("InstanceCount")
	if aerr != nil {
		return nil, aerr
	}
	if count < 1 || count > 1000 {
		return nil, errInvalidParameterValue("InstanceCount", strconv.FormatInt(count, 10), "Expecting a value between 1 and 1000.")
	}
	it := e.typeIndex[typeName]
	if it == nil {
		return nil, errInvalidParameterValue("InstanceType", typeName, "The instance type does not exist.")
	}
	var zone *Zone
	zoneName, zoneID := p.Get("AvailabilityZone"), p.Get("AvailabilityZoneId")
	if zoneName == "" && zoneID == "" {
		return nil, errMissingParameter("AvailabilityZone")
	}
	for _, z := range e.catalog.Zones(e.opts.Region) {
		if z.Name == zoneName || zoneName == "" && z.ID == zoneID {
			zone = &z
			break
		}
	}
	if zone == nil || zoneID != "" && zone.ID != zoneID {
		return nil, errInvalidParameterValue("AvailabilityZone", zoneName+zoneID, "Invalid availability zone.")
	}
	if !e.catalog.Offered(e.opts.Region, zone.Name, typeName) {
		return nil, newAPIError("Unsupported", 400, "Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", typeName, zone.Name)
	}
	match := p.Get("InstanceMatchCriteria")
	switch match {
	case "":
		match = MatchOpen
	case MatchOpen, MatchTargeted:
	default:
		return nil, errInvalidParameterValue("InstanceMatchCriteria", match, "Valid values are open, targeted.")
	}
	tenancy := p.Get("Tenancy")
	if tenancy == "" {
		tenancy = "default"
	}
	endType := p.Get("EndDateType")
	if endType == "" {
		endType = "unlimited"
	}
	now := e.clock.Now().UTC().Truncate(time.Second)
	var end time.Time
	switch endType {
	case "unlimited":
		if p.Get("EndDate") != "" {
			return nil, errInvalidParameterCombination("EndDate cannot be specified when EndDateType is unlimited.")
		}
	case "limited":
		v := p.Get("EndDate")
		if v == "" {
			return nil, errMissingParameter("EndDate")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, errInvalidParameterValue("EndDate", v, "Expecting an ISO 8601 date and time.")
		}
		if !t.After(now) {
			return nil, errInvalidParameterValue("EndDate", v, "The end date must be in the future.")
		}
		end = t.UTC()
	default:
		return nil, errInvalidParameterValue("EndDateType", endType, "Valid values are unlimited, limited.")
	}
	tags := map[string]string{}
	for _, key := range []string{"TagSpecifications", "TagSpecification"} {
		specs, aerr := parseTagSpecs(p, key)
		if aerr != nil {
			return nil, aerr
		}
		for rt, ts := range specs {
			if rt != "capacity-reservation" {
				return nil, errInvalidParameterValue("TagSpecification.ResourceType", rt, "CreateCapacityReservation tags only the capacity-reservation resource type.")
			}
			for k, v := range ts {
				tags[k] = v
			}
		}
	}
	r := &CapacityReservation{
		ID: e.newID("cr"), InstanceType: typeName, Platform: platform, Zone: zone.Name, ZoneID: zone.ID,
		Tenancy: tenancy, Total: int(count), MatchCriteria: match, EndDateType: endType, EndDate: end,
		State: ReservationActive, CreateDate: now, Type: ReservationTypeDefault, Tags: tags,
	}
	e.acct.reservations = append(e.acct.reservations, r)
	if !end.IsZero() {
		e.at(end, r.ID, timerReservationEnd)
	}
	return capacityReservationResultXML{CapacityReservation: e.reservationToXML(r)}, nil
}

// endReservation expires a limited reservation at its end date. Its
// instances keep running as plain on-demand instances, as in EC2 (a
// Capacity Block's were terminated from 30 minutes before). Callers hold
// mu.
func (e *Emulator) endReservation(id string) {
	if r := e.reservation(id); r != nil && r.State == ReservationActive {
		r.State = ReservationExpired
	}
}

func (e *Emulator) cancelCapacityReservation(req *request) (any, *apiError) {
	id := req.params.Get("CapacityReservationId")
	if id == "" {
		return nil, errMissingParameter("CapacityReservationId")
	}
	r := e.reservation(id)
	if r == nil {
		return nil, notFoundIDs("capacity reservation", "InvalidCapacityReservationId.NotFound", []string{id})
	}
	if r.State != ReservationActive {
		return nil, newAPIError("InvalidCapacityReservationId.NotFound", 400, "The capacity reservation '%s' is %s and cannot be cancelled.", id, r.State)
	}
	if r.Type == ReservationTypeCapacityBlock {
		return nil, errInvalidParameterValue("CapacityReservationId", id, "A Capacity Block cannot be cancelled.")
	}
	r.State = ReservationCancelled
	return returnXML{Return: true}, nil
}

func (e *Emulator) describeCapacityReservations(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeCapacityReservations")
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkFilterNames(filters, reservationFields(e.opts.AccountID, &CapacityReservation{})); aerr != nil {
		return nil, aerr
	}
	list := e.acct.reservations
	if ids := p.Strings("CapacityReservationId"); len(ids) > 0 {
		var sel []*CapacityReservation
		var missing []string
		for _, id := range ids {
			if r := e.reservation(id); r != nil {
				sel = append(sel, r)
			} else {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return nil, notFoundIDs("capacity reservation", "InvalidCapacityReservationId.NotFound", missing)
		}
		list = sel
	}
	var matched []*CapacityReservation
	for _, r := range list {
		ok, aerr := matchFilters(filters, r.Tags, reservationFields(e.opts.AccountID, r))
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			matched = append(matched, r)
		}
	}
	from, to, next := pg.slice("DescribeCapacityReservations", len(matched))
	out := describeCapacityReservationsXML{NextToken: next}
	for _, r := range matched[from:to] {
		out.CapacityReservationSet.Items = append(out.CapacityReservationSet.Items, e.reservationToXML(r))
	}
	return out, nil
}

// reservationFields answers DescribeCapacityReservations' filters (tag
// filters too: EC2 answers them, though the model's text does not list
// them, and the peer selects reservations by tag).
func reservationFields(owner string, r *CapacityReservation) fieldFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-type":
			return []string{r.InstanceType}, true
		case "owner-id":
			return []string{owner}, true
		case "instance-platform":
			return []string{r.Platform}, true
		case "availability-zone":
			return []string{r.Zone}, true
		case "tenancy":
			return []string{r.Tenancy}, true
		case "state":
			return []string{r.State}, true
		case "start-date":
			return []string{r.CreateDate.Format(ec2Time)}, true
		case "end-date":
			if r.EndDate.IsZero() {
				return nil, true
			}
			return []string{r.EndDate.Format(ec2Time)}, true
		case "end-date-type":
			return []string{r.EndDateType}, true
		case "instance-match-criteria":
			return []string{r.MatchCriteria}, true
		}
		return nil, false
	}
}

func (e *Emulator) reservationToXML(r *CapacityReservation) capacityReservationXML {
	x := capacityReservationXML{
		CapacityReservationID: r.ID, OwnerID: e.opts.AccountID,
		CapacityReservationArn: fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", e.opts.Region, e.opts.AccountID, r.ID),
		AvailabilityZoneID:     r.ZoneID, InstanceType: r.InstanceType, InstancePlatform: r.Platform,
		AvailabilityZone: r.Zone, Tenancy: r.Tenancy, TotalInstanceCount: r.Total,
		AvailableInstanceCount: e.reservationAvailable(r), State: r.State,
		StartDate: r.CreateDate.Format(ec2Time), EndDateType: r.EndDateType, CapacityBlockID: r.BlockID,
		InstanceMatchCriteria: r.MatchCriteria, CreateDate: r.CreateDate.Format(ec2Time),
		TagSet: tagSet(r.Tags), ReservationType: r.Type,
	}
	if !r.StartDate.IsZero() {
		x.StartDate = r.StartDate.Format(ec2Time)
	}
	if !r.EndDate.IsZero() {
		x.EndDate = r.EndDate.Format(ec2Time)
	}
	return x
}

// reservationFor decides which reservation, if any, an on-demand launch of
// candidate c goes into, from its launch template's
// CapacityReservationSpecification: a targeted reservation must be active,
// of the candidate's type and zone and have room (else the launch fails:
// ReservationCapacityExceeded when full or no longer active); with the
// preference capacity-reservations-only and no target, an open reservation
// with room must exist; with the preference open (the default), an
// open reservation with room is used when there is one; with none, never.
// Spot launches never use a reservation. A capacity-block launch must
// target an active Capacity Block outside its last 30 minutes; an
// on-demand launch cannot target one. Callers hold mu.
func (e *Emulator) reservationFor(c *fleetCandidate, capType string) (*CapacityReservation, *apiError) {
	pref, target := c.lt.Data.ReservationPreference, c.lt.Data.ReservationID
	if capType == MarketCapacityBlock && target == "" {
		return nil, errInvalidParameterCombination("A capacity-block launch must target a Capacity Block (CapacityReservationSpecification.CapacityReservationTarget).")
	}
	if capType != "on-demand" && capType != MarketCapacityBlock {
		if target != "" || pref == prefOnly {
			return nil, errInvalidParameterCombination("A capacity reservation can be used by on-demand launches only.")
		}
		return nil, nil
	}
	zone, typ := c.subnet.Zone.Name, c.instanceType.Name
	if target != "" {
		r := e.reservation(target)
		if r == nil {
			return nil, newAPIError("InvalidCapacityReservationId.NotFound", 400, "The capacity reservation '%s' does not exist.", target)
		}
		if (r.Type == ReservationTypeCapacityBlock) != (capType == MarketCapacityBlock) {
			return nil, errInvalidParameterValue("InstanceMarketOptions.MarketType", capType,
				fmt.Sprintf("The market type (purchasing) option is not valid for the capacity reservation %s of type %s: launch into a Capacity Block with the market type capacity-block, into others without.", r.ID, r.Type))
		}
		if r.InstanceType != typ || r.Zone != zone {
			return nil, errInvalidParameterCombination(fmt.Sprintf("The capacity reservation %s reserves %s in %s, not %s in %s.", r.ID, r.InstanceType, r.Zone, typ, zone))
		}
		if e.reservationAvailable(r) == 0 {
			return nil, newAPIError("ReservationCapacityExceeded", 400, "The capacity reservation %s (%s) has no available capacity.", r.ID, r.State)
		}
		return r, nil
	}
	if pref == prefNone {
		return nil, nil
	}
	var open []*CapacityReservation
	for _, r := range e.acct.reservations {
		if r.MatchCriteria == MatchOpen && r.InstanceType == typ && r.Zone == zone && e.reservationAvailable(r) > 0 {
			open = append(open, r)
		}
	}
	if len(open) == 0 {
		if pref == prefOnly {
			return nil, newAPIError("ReservationCapacityExceeded", 400, "No open capacity reservation for %s in %s has available capacity.", typ, zone)
		}
		return nil, nil
	}
	sort.SliceStable(open, func(i, j int) bool { return open[i].CreateDate.Before(open[j].CreateDate) })
	return open[0], nil
}
