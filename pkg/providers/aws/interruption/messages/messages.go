package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind says what an event announces.
type Kind string

// Kinds of message. The string values match the message_type label of the
// interruption metrics users know.
const (
	KindSpotInterruption        Kind = "spot_interrupted"
	KindRebalanceRecommendation Kind = "rebalance_recommendation"
	KindScheduledChange         Kind = "scheduled_change"
	KindStateChange             Kind = "state_change"
	KindUnknown                 Kind = "unknown"
)

// EventBridge detail types and sources.
const (
	SourceEC2                     = "aws.ec2"
	SourceHealth                  = "aws.health"
	DetailTypeSpotInterruption    = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalance           = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange         = "EC2 Instance State-change Notification"
	DetailTypeHealthEvent         = "AWS Health Event"
	HealthCategoryScheduledChange = "scheduledChange"
)

// Instance states reported by state-change notifications that mean the
// instance is going away.
const (
	StateStopping     = "stopping"
	StateStopped      = "stopped"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
)

// Message is one parsed event.
type Message struct {
	// ID is the EventBridge event id.
	ID string
	// Kind says what happens; State is the new instance state of a
	// KindStateChange message ("" otherwise).
	Kind  Kind
	State string
	// InstanceIDs are the affected instances, sorted.
	InstanceIDs []string
	// Time is the event time; zero when the event has none.
	Time time.Time
	// Source and DetailType are the event's own.
	Source, DetailType string
	// Account and Region are the envelope's: the AWS account and region
	// the event is about ("" when the event has none). See CheckOrigin.
	Account, Region string
}

// ErrForeign is wrapped by every *ForeignError.
var ErrForeign = errors.New("interruption message for another account or region")

// ForeignError reports a message about another account or region than the
// controller's: its instances cannot be the controller's, so it is ignored.
type ForeignError struct {
	// Field is "account" or "region".
	Field string
	// Got is the message's value ("" when it has none), Want the
	// configured one.
	Got, Want string
}

func (e *ForeignError) Error() string {
	got := e.Got
	if got == "" {
		got = "none"
	}
	return fmt.Sprintf("interruption message for %s %s, not this controller's %s %s", e.Field, got, e.Field, e.Want)
}

// Unwrap returns ErrForeign.
func (e *ForeignError) Unwrap() error { return ErrForeign }

// CheckOrigin compares the message's account and region with the
// configured ones and returns a *ForeignError for the first that differs
// (account first). An empty account or region argument is not checked; a
// message that lacks a field being checked does not match. Messages of
// every kind are checked, KindUnknown included.
func (m *Message) CheckOrigin(account, region string) error {
	if account != "" && m.Account != account {
		return &ForeignError{Field: "account", Got: m.Account, Want: account}
	}
	if region != "" && m.Region != region {
		return &ForeignError{Field: "region", Got: m.Region, Want: region}
	}
	return nil
}

// Disruptive reports whether the message means the instances will stop
// running: a spot interruption, a scheduled change, or a state change to
// stopping, stopped, shutting-down or terminated. A rebalance
// recommendation is advisory and not disruptive.
func (m *Message) Disruptive() bool {
	switch m.Kind {
	case KindSpotInterruption, KindScheduledChange:
		return true
	case KindStateChange:
		switch m.State {
		case StateStopping, StateStopped, StateShuttingDown, StateTerminated:
			return true
		}
	}
	return false
}

// ErrMalformed is wrapped by every *Error.
var ErrMalformed = errors.New("malformed interruption message")

// Error reports a body that is not an EventBridge event, or an event of a
// known kind that lacks what that kind needs.
type Error struct {
	// Field is the JSON path of the problem ("detail.instance-id"), or ""
	// for the body as a whole.
	Field  string
	Detail string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "malformed interruption message: " + e.Detail
	}
	return fmt.Sprintf("malformed interruption message: %s: %s", e.Field, e.Detail)
}

// Unwrap returns ErrMalformed.
func (e *Error) Unwrap() error { return ErrMalformed }

// envelope is the EventBridge event envelope.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// MaxBodyBytes is the largest body Parse reads (SQS messages are at most
// 256 KiB).
const MaxBodyBytes = 256 << 10

// Parse reads one queue message body.
func Parse(body []byte) (*Message, error) {
	if len(body) > MaxBodyBytes {
		return nil, &Error{Detail: fmt.Sprintf("body of %d bytes exceeds %d", len(body), MaxBodyBytes)}
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, &Error{Detail: "not an EventBridge event: " + err.Error()}
	}
	if env.Source == "" || env.DetailType == "" {
		return nil, &Error{Detail: "not an EventBridge event: source and detail-type are required"}
	}
	m := &Message{ID: env.ID, Source: env.Source, DetailType: env.DetailType, Kind: KindUnknown, Account: env.Account, Region: env.Region}
	if env.Time != "" {
		t, err := time.Parse(time.RFC3339, env.Time)
		if err != nil {
			return nil, &Error{Field: "time", Detail: err.Error()}
		}
		m.Time = t
	}
	var err error
	switch {
	case env.Source == SourceEC2 && env.DetailType == DetailTypeSpotInterruption:
		m.Kind = KindSpotInterruption
		err = m.instanceDetail(env.Detail, nil)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeRebalance:
		m.Kind = KindRebalanceRecommendation
		err = m.instanceDetail(env.Detail, nil)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeStateChange:
		m.Kind = KindStateChange
		err = m.instanceDetail(env.Detail, &m.State)
	case env.Source == SourceHealth && env.DetailType == DetailTypeHealthEvent:
		err = m.healthDetail(env.Detail)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// instanceDetail reads detail.instance-id (and detail.state).
func (m *Message) instanceDetail(raw json.RawMessage, state *string) error {
	var d struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	}
	if len(raw) == 0 {
		return &Error{Field: "detail", Detail: "missing"}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return &Error{Field: "detail", Detail: err.Error()}
	}
	if !validInstanceID(d.InstanceID) {
		return &Error{Field: "detail.instance-id", Detail: fmt.Sprintf("%q is not an instance id", d.InstanceID)}
	}
	m.InstanceIDs = []string{d.InstanceID}
	if state != nil {
		if d.State == "" {
			return &Error{Field: "detail.state", Detail: "missing"}
		}
		*state = d.State
	}
	return nil
}

// healthDetail reads an AWS Health event: only EC2 scheduled changes are
// interruptions; other health events are KindUnknown.
func (m *Message) healthDetail(raw json.RawMessage) error {
	var d struct {
		Service           string `json:"service"`
		EventTypeCategory string `json:"eventTypeCategory"`
		AffectedEntities  []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	}
	if len(raw) == 0 {
		return &Error{Field: "detail", Detail: "missing"}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return &Error{Field: "detail", Detail: err.Error()}
	}
	if d.Service != "EC2" || d.EventTypeCategory != HealthCategoryScheduledChange {
		return nil
	}
	m.Kind = KindScheduledChange
	for _, e := range d.AffectedEntities {
		if validInstanceID(e.EntityValue) {
			m.InstanceIDs = append(m.InstanceIDs, e.EntityValue)
		}
	}
	if len(m.InstanceIDs) == 0 {
		return &Error{Field: "detail.affectedEntities", Detail: "no instance id"}
	}
	slices.Sort(m.InstanceIDs)
	m.InstanceIDs = slices.Compact(m.InstanceIDs)
	return nil
}

// validInstanceID accepts i- followed by 8 or 17 hex digits.
func validInstanceID(s string) bool {
	rest, ok := strings.CutPrefix(s, "i-")
	if !ok || (len(rest) != 8 && len(rest) != 17) {
		return false
	}
	for _, c := range rest {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
