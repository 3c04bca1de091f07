package awsemu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Scheduled event codes (DescribeInstanceStatus events, EC2's EventCode).
const (
	EventInstanceRetirement = "instance-retirement"
	EventInstanceStop       = "instance-stop"
	EventInstanceReboot     = "instance-reboot"
	EventSystemReboot       = "system-reboot"
	EventSystemMaintenance  = "system-maintenance"
)

// EventCodes lists the scheduled event codes ScheduleEvent accepts, sorted.
func EventCodes() []string {
	c := []string{EventInstanceRetirement, EventInstanceStop, EventInstanceReboot, EventSystemReboot, EventSystemMaintenance}
	sort.Strings(c)
	return c
}

// DefaultEventLead is how far ahead ScheduleEvent schedules an event
// without a start time (AWS gives at least two weeks' notice of a
// retirement).
const DefaultEventLead = 14 * 24 * time.Hour

// ScheduledEvent is an event EC2 scheduled for an instance, as
// DescribeInstanceStatus reports it.
type ScheduledEvent struct {
	ID          string    `json:"id"`
	Code        string    `json:"code"`
	Description string    `json:"description"`
	NotBefore   time.Time `json:"notBefore"`
	NotAfter    time.Time `json:"notAfter,omitzero"`
	// NotBeforeDeadline is the latest the event can be rescheduled to
	// (reboots and maintenance only).
	NotBeforeDeadline time.Time `json:"notBeforeDeadline,omitzero"`
	// Completed is set once the event's start time passed; the description
	// then starts with "[Completed]".
	Completed bool `json:"completed,omitempty"`
}

// ScheduleEventRequest is the admin API's body for a scheduled event.
type ScheduleEventRequest struct {
	// Target is an instance id, a node name or a provider id.
	Target string `json:"target"`
	Code   string `json:"code"`
	// In is how long from now the event starts (default DefaultEventLead),
	// as a Go duration ("336h").
	In string `json:"in,omitempty"`
}

// StatusCheckRequest is the admin API's body for a status check result.
type StatusCheckRequest struct {
	Target string `json:"target"`
	// Check is "system" or "instance"; Status "impaired" or "ok".
	Check  string `json:"check"`
	Status string `json:"status"`
}

// InstanceFaults are the scheduled events and failed status checks of one
// instance, as Faults reports them.
type InstanceFaults struct {
	InstanceID      string           `json:"instanceId"`
	ScheduledEvents []ScheduledEvent `json:"scheduledEvents,omitempty"`
	SystemImpaired  bool             `json:"systemImpaired,omitempty"`
	InstanceImpair  bool             `json:"instanceImpaired,omitempty"`
	NodeFault       *NodeFault       `json:"nodeFault,omitempty"`
}

var eventDescriptions = map[string]string{
	EventInstanceRetirement: "The instance is running on degraded hardware",
	EventInstanceStop:       "The instance is running on degraded hardware",
	EventInstanceReboot:     "Scheduled reboot",
	EventSystemReboot:       "Scheduled system reboot",
	EventSystemMaintenance:  "Scheduled system maintenance",
}

// ScheduleEvent schedules an event for an instance (target: an instance
// id, node name or provider id) starting in `in` (DefaultEventLead when 0).
// DescribeInstanceStatus reports it from now on. When it starts, an
// instance-stop or instance-retirement stops the running instance (EBS
// backed, as every emulated instance is); the reboots and the maintenance
// change nothing; the event then reads "[Completed]".
func (e *Emulator) ScheduleEvent(target, code string, in time.Duration) (ScheduledEvent, error) {
	if !contains(EventCodes(), code) {
		return ScheduledEvent{}, fmt.Errorf("%w %q: valid codes are %s", ErrUnknownKind, code, strings.Join(EventCodes(), ", "))
	}
	if in < 0 {
		return ScheduledEvent{}, fmt.Errorf("awsemu: ScheduleEvent: the start %v is in the past", in)
	}
	if in == 0 {
		in = DefaultEventLead
	}
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.poke()
	rec := e.findInstance(target)
	if rec == nil {
		return ScheduledEvent{}, fmt.Errorf("%w: %q", ErrUnknownTarget, target)
	}
	if rec.State == StateShuttingDown || rec.State == StateTerminated {
		return ScheduledEvent{}, fmt.Errorf("%w: %s is %s", ErrInstanceGone, rec.ID, rec.State)
	}
	now := e.clock.Now().UTC().Truncate(time.Millisecond)
	ev := ScheduledEvent{
		ID:   fmt.Sprintf("instance-event-0%016x", e.rng.Uint64()),
		Code: code, Description: eventDescriptions[code],
		NotBefore: now.Add(in),
	}
	switch code {
	case EventInstanceReboot, EventSystemReboot, EventSystemMaintenance:
		ev.NotAfter = ev.NotBefore.Add(2 * time.Hour)
		ev.NotBeforeDeadline = ev.NotBefore.Add(7 * 24 * time.Hour)
	}
	rec.ScheduledEvents = append(rec.ScheduledEvents, ev)
	e.at(ev.NotBefore, rec.ID, timerScheduledEvent)
	return ev, nil
}

// SetStatusCheck sets the result of an instance's system or instance
// status check: "impaired" (reachability failed) or "ok" (the running
// instance's normal answer).
func (e *Emulator) SetStatusCheck(target, check, status string) error {
	if check != "system" && check != "instance" {
		return fmt.Errorf("%w: status check %q: valid checks are instance, system", ErrUnknownKind, check)
	}
	if status != "impaired" && status != "ok" {
		return fmt.Errorf("%w: status %q: valid statuses are impaired, ok", ErrUnknownKind, status)
	}
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := e.findInstance(target)
	if rec == nil {
		return fmt.Errorf("%w: %q", ErrUnknownTarget, target)
	}
	if check == "system" {
		rec.SystemImpaired = status == "impaired"
	} else {
		rec.InstanceImpaired = status == "impaired"
	}
	return nil
}

// fireScheduledEvents completes the instance's events whose start passed,
// stopping it for a stop or retirement. Callers hold mu.
func (e *Emulator) fireScheduledEvents(in *instanceRec, now time.Time) {
	for i := range in.ScheduledEvents {
		ev := &in.ScheduledEvents[i]
		if ev.Completed || ev.NotBefore.After(now) {
			continue
		}
		ev.Completed = true
		ev.Description = "[Completed] " + ev.Description
		if (ev.Code == EventInstanceStop || ev.Code == EventInstanceRetirement) && (in.State == StateRunning || in.State == StatePending) {
			e.transition(in, StateStopping, "Server.ScheduledStop: Stopped due to scheduled retirement", now)
			e.at(now.Add(e.scaled(e.opts.ShutdownDelay)), in.ID, timerStop)
		}
	}
}

// instanceFaults lists the instances with scheduled events or failed
// checks, in launch order. Callers hold mu.
func (e *Emulator) instanceFaults() []InstanceFaults {
	var out []InstanceFaults
	for _, id := range e.acct.order {
		in := e.acct.instances[id]
		if in == nil || (len(in.ScheduledEvents) == 0 && !in.SystemImpaired && !in.InstanceImpaired && in.NodeFault == nil) {
			continue
		}
		c := in.clone()
		out = append(out, InstanceFaults{InstanceID: id, ScheduledEvents: c.ScheduledEvents,
			SystemImpaired: in.SystemImpaired, InstanceImpair: in.InstanceImpaired, NodeFault: c.NodeFault})
	}
	return out
}

// clearInstanceFaults removes every scheduled event and failed check.
// Callers hold mu.
func (e *Emulator) clearInstanceFaults() {
	for _, in := range e.acct.instances {
		if in.NodeFault != nil {
			in.NodeFault = nil
			e.publish(InstanceEvent{Previous: in.State, Instance: in.clone()})
		}
		in.ScheduledEvents, in.SystemImpaired, in.InstanceImpaired = nil, false, false
	}
}

// describeInstanceStatus answers the status checks and scheduled events
// of instances: running instances only unless IncludeAllInstances. A
// running instance's checks are "ok" (reachability "passed") unless set
// impaired ("failed"), "initializing" while pending, "not-applicable"
// otherwise.
func (e *Emulator) describeInstanceStatus(req *request) (any, *apiError) {
	p := req.params
	filters, ids, pg, aerr := e.instanceQuery(p, "DescribeInstanceStatus")
	if aerr != nil {
		return nil, aerr
	}
	for _, f := range filters {
		if !contains(instanceStatusFilters, f.Name) {
			return nil, newAPIError("InvalidParameterValue", 400, "The filter '%s' is invalid", f.Name)
		}
	}
	all := p.Bool("IncludeAllInstances")
	var items []instanceStatusXML
	for _, id := range e.acct.order {
		in := e.acct.instances[id]
		if in == nil || (len(ids) > 0 && !contains(ids, id)) || (!all && in.State != StateRunning) {
			continue
		}
		system, instance := checkSummary(in.State, in.SystemImpaired), checkSummary(in.State, in.InstanceImpaired)
		if in.State == StateRunning && in.RebootingUntil.After(e.clock.Now()) {
			// Rebooting: the instance check starts over.
			instance = checkSummary(StatePending, false)
		}
		ebs := checkSummary(in.State, false)
		var events []instanceStatusEventXML
		for _, ev := range in.ScheduledEvents {
			x := instanceStatusEventXML{Code: ev.Code, Description: ev.Description, InstanceEventID: ev.ID, NotBefore: ec2TimeOf(ev.NotBefore)}
			x.NotAfter, x.NotBeforeDeadline = ec2TimeOf(ev.NotAfter), ec2TimeOf(ev.NotBeforeDeadline)
			events = append(events, x)
		}
		eventField := func(get func(instanceStatusEventXML) string) []string {
			var v []string
			for _, x := range events {
				if s := get(x); s != "" {
					v = append(v, s)
				}
			}
			return v
		}
		fields := func(name string) ([]string, bool) {
			switch name {
			case "availability-zone":
				return []string{in.Zone}, true
			case "availability-zone-id":
				return []string{in.ZoneID}, true
			case "instance-state-name":
				return []string{in.State}, true
			case "instance-state-code":
				return []string{strconv.Itoa(stateCode(in.State))}, true
			case "system-status.status":
				return []string{system.Status}, true
			case "instance-status.status":
				return []string{instance.Status}, true
			case "attached-ebs-status.status":
				return []string{ebs.Status}, true
			case "system-status.reachability":
				return detailStatuses(system), true
			case "instance-status.reachability":
				return detailStatuses(instance), true
			case "operator.managed":
				return []string{"false"}, true
			case "event.code":
				return eventField(func(x instanceStatusEventXML) string { return x.Code }), true
			case "event.description":
				return eventField(func(x instanceStatusEventXML) string { return x.Description }), true
			case "event.instance-event-id":
				return eventField(func(x instanceStatusEventXML) string { return x.InstanceEventID }), true
			case "event.not-before":
				return eventField(func(x instanceStatusEventXML) string { return x.NotBefore }), true
			case "event.not-after":
				return eventField(func(x instanceStatusEventXML) string { return x.NotAfter }), true
			case "event.not-before-deadline":
				return eventField(func(x instanceStatusEventXML) string { return x.NotBeforeDeadline }), true
			}
			return nil, false
		}
		ok, aerr := matchUntagged(filters, fields)
		if aerr != nil {
			return nil, aerr
		}
		if !ok {
			continue
		}
		items = append(items, instanceStatusXML{
			InstanceID: in.ID, AvailabilityZone: in.Zone, AvailabilityZoneID: in.ZoneID,
			InstanceState:  instanceStateXML{Code: stateCode(in.State), Name: in.State},
			SystemStatus:   system,
			InstanceStatus: instance,
			EBSStatus:      ebs,
			EventsSet:      set[instanceStatusEventXML]{Items: events},
		})
	}
	from, to, next := pg.slice("DescribeInstanceStatus", len(items))
	return describeInstanceStatusXML{InstanceStatusSet: set[instanceStatusXML]{Items: items[from:to]}, NextToken: next}, nil
}

// checkSummary is a status check's answer for an instance in state.
func checkSummary(state string, impaired bool) statusSummaryXML {
	status, detail := "not-applicable", ""
	switch {
	case state == StateRunning && impaired:
		status, detail = "impaired", "failed"
	case state == StateRunning:
		status, detail = "ok", "passed"
	case state == StatePending:
		status, detail = "initializing", "initializing"
	}
	s := statusSummaryXML{Status: status}
	if detail != "" {
		s.Details.Items = []statusDetailXML{{Name: "reachability", Status: detail}}
	}
	return s
}

func detailStatuses(s statusSummaryXML) []string {
	var v []string
	for _, d := range s.Details.Items {
		v = append(v, d.Status)
	}
	return v
}

// ec2TimeOf formats a time as EC2 does, "" for the zero time.
func ec2TimeOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(ec2Time)
}

// instanceStatusFilters are the DescribeInstanceStatus filters of
// botocore's model the emulator has data for (all but
// application-status.status and operator.principal).
var instanceStatusFilters = []string{
	"availability-zone", "availability-zone-id", "instance-state-name", "instance-state-code",
	"instance-status.status", "system-status.status", "instance-status.reachability", "system-status.reachability",
	"attached-ebs-status.status", "operator.managed",
	"event.code", "event.description", "event.instance-event-id", "event.not-before", "event.not-after", "event.not-before-deadline",
}

type describeInstanceStatusXML struct {
	InstanceStatusSet set[instanceStatusXML] `xml:"instanceStatusSet"`
	NextToken         string                 `xml:"nextToken,omitempty"`
}

type instanceStatusXML struct {
	InstanceID         string                      `xml:"instanceId"`
	AvailabilityZone   string                      `xml:"availabilityZone"`
	AvailabilityZoneID string                      `xml:"availabilityZoneId,omitempty"`
	EventsSet          set[instanceStatusEventXML] `xml:"eventsSet"`
	InstanceState      instanceStateXML            `xml:"instanceState"`
	SystemStatus       statusSummaryXML            `xml:"systemStatus"`
	InstanceStatus     statusSummaryXML            `xml:"instanceStatus"`
	EBSStatus          statusSummaryXML            `xml:"attachedEbsStatus"`
}

type instanceStatusEventXML struct {
	Code              string `xml:"code"`
	Description       string `xml:"description"`
	InstanceEventID   string `xml:"instanceEventId"`
	NotBefore         string `xml:"notBefore"`
	NotAfter          string `xml:"notAfter,omitempty"`
	NotBeforeDeadline string `xml:"notBeforeDeadline,omitempty"`
}

type statusSummaryXML struct {
	Status  string               `xml:"status"`
	Details set[statusDetailXML] `xml:"details"`
}

type statusDetailXML struct {
	Name   string `xml:"name"`
	Status string `xml:"status"`
}
