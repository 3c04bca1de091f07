package awsemu

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// EventBridge (AWS JSON 1.1, target prefix AWSEvents): PutRule, PutTargets,
// ListRules and ListTargetsByRule on the default event bus, enough for the
// interruption rules of docs/aws.md to be created with the AWS CLI and for
// `dovetail migrate` to check them. Rules only record: events are not
// matched or delivered (the emulator puts interruption messages on the
// queue itself, see Interrupt).
var eventsOps = map[string]jsonHandler{
	"PutRule":           (*Emulator).eventsPutRule,
	"PutTargets":        (*Emulator).eventsPutTargets,
	"ListRules":         (*Emulator).eventsListRules,
	"ListTargetsByRule": (*Emulator).eventsListTargetsByRule,
}

const defaultEventBus = "default"

// eventsMaxTargets is EventBridge's limit of targets per rule.
const eventsMaxTargets = 5

var (
	ruleNameRe = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
	targetIDRe = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
)

// EventRule is a recorded EventBridge rule with its targets.
type EventRule struct {
	Name         string        `json:"Name"`
	Arn          string        `json:"Arn"`
	EventPattern string        `json:"EventPattern,omitempty"`
	Schedule     string        `json:"ScheduleExpression,omitempty"`
	State        string        `json:"State"`
	Description  string        `json:"Description,omitempty"`
	EventBusName string        `json:"EventBusName"`
	Targets      []EventTarget `json:"-"`
}

// EventTarget is a rule's target (only the id and ARN are kept).
type EventTarget struct {
	ID  string `json:"Id"`
	Arn string `json:"Arn"`
}

type eventsState struct {
	mu    sync.Mutex
	rules map[string]*EventRule // by name, default bus only
}

func (e *Emulator) eventRules() *eventsState {
	e.eventsOnce.Do(func() { e.events = &eventsState{rules: map[string]*EventRule{}} })
	return e.events
}

// EventRules returns the recorded rules with their targets, by name.
func (e *Emulator) EventRules() []EventRule {
	s := e.eventRules()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]EventRule, 0, len(s.rules))
	for _, r := range s.rules {
		c := *r
		c.Targets = append([]EventTarget(nil), r.Targets...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func eventsNotFound(format string, args ...any) *apiError {
	return newAPIError("ResourceNotFoundException", 400, format, args...)
}

func eventsValidation(format string, args ...any) *apiError {
	return newAPIError("ValidationException", 400, format, args...)
}

// checkBus accepts the default bus (by name or ARN) or none.
func (e *Emulator) checkBus(bus string) *apiError {
	if bus == "" || bus == defaultEventBus || bus == fmt.Sprintf("arn:aws:events:%s:%s:event-bus/default", e.opts.Region, e.opts.AccountID) {
		return nil
	}
	return eventsNotFound("Event bus %s does not exist.", bus)
}

func (e *Emulator) eventsPutRule(req *request) (any, *apiError) {
	var in struct {
		Name, EventPattern, ScheduleExpression, State, Description, RoleArn, EventBusName string
		Tags                                                                              []struct{ Key, Value string }
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if aerr := e.checkBus(in.EventBusName); aerr != nil {
		return nil, aerr
	}
	if !ruleNameRe.MatchString(in.Name) {
		return nil, eventsValidation("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+", in.Name)
	}
	if in.EventPattern == "" && in.ScheduleExpression == "" {
		return nil, eventsValidation("Parameter(s) EventPattern or ScheduleExpression must be specified.")
	}
	if in.EventPattern != "" {
		var pat map[string]any
		if err := json.Unmarshal([]byte(in.EventPattern), &pat); err != nil {
			return nil, newAPIError("InvalidEventPatternException", 400, "Event pattern is not valid. Reason: %v", err)
		}
	}
	switch in.State {
	case "":
		in.State = "ENABLED"
	case "ENABLED", "DISABLED":
	default:
		return nil, eventsValidation("1 validation error detected: Value '%s' at 'state' failed to satisfy constraint: Member must satisfy enum value set: [ENABLED, DISABLED]", in.State)
	}
	arn := fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", e.opts.Region, e.opts.AccountID, in.Name)
	s := e.eventRules()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rules[in.Name]
	if r == nil {
		r = &EventRule{Name: in.Name, Arn: arn, EventBusName: defaultEventBus}
		s.rules[in.Name] = r
	}
	r.EventPattern, r.Schedule, r.State, r.Description = in.EventPattern, in.ScheduleExpression, in.State, in.Description
	return map[string]string{"RuleArn": arn}, nil
}

func (e *Emulator) eventsPutTargets(req *request) (any, *apiError) {
	var in struct {
		Rule, EventBusName string
		Targets            []struct{ Id, Arn string }
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if aerr := e.checkBus(in.EventBusName); aerr != nil {
		return nil, aerr
	}
	if len(in.Targets) == 0 || len(in.Targets) > 10 {
		return nil, eventsValidation("1 validation error detected: Value at 'targets' failed to satisfy constraint: Member must have length between 1 and 10")
	}
	s := e.eventRules()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rules[in.Rule]
	if r == nil {
		return nil, eventsNotFound("Rule %s does not exist on EventBus default.", in.Rule)
	}
	type failed struct{ TargetId, ErrorCode, ErrorMessage string }
	fails := []failed{}
	for _, t := range in.Targets {
		if !targetIDRe.MatchString(t.Id) {
			return nil, eventsValidation("1 validation error detected: Value '%s' at 'targets.id' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+", t.Id)
		}
		if !strings.HasPrefix(t.Arn, "arn:") {
			return nil, eventsValidation("Parameter %s is not valid. Reason: Provided Arn is not in correct format.", t.Arn)
		}
		i := -1
		for j := range r.Targets {
			if r.Targets[j].ID == t.Id {
				i = j
			}
		}
		switch {
		case i >= 0:
			r.Targets[i].Arn = t.Arn
		case len(r.Targets) >= eventsMaxTargets:
			fails = append(fails, failed{TargetId: t.Id, ErrorCode: "LimitExceededException", ErrorMessage: "The requested resource exceeds the maximum number allowed."})
		default:
			r.Targets = append(r.Targets, EventTarget{ID: t.Id, Arn: t.Arn})
		}
	}
	return map[string]any{"FailedEntryCount": len(fails), "FailedEntries": fails}, nil
}

// eventsPage reads Limit (1..100) and NextToken (an offset this emulator
// wrote).
func eventsPage(limit *int, token string, n int) (from, to int, next string, aerr *apiError) {
	size := 100
	if limit != nil {
		if *limit < 1 || *limit > 100 {
			return 0, 0, "", eventsValidation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", *limit)
		}
		size = *limit
	}
	if token != "" {
		off, err := strconv.Atoi(strings.TrimPrefix(token, "emu-"))
		if err != nil || !strings.HasPrefix(token, "emu-") || off < 0 || off > n {
			return 0, 0, "", eventsValidation("The NextToken provided is invalid.")
		}
		from = off
	}
	to = min(from+size, n)
	if to < n {
		next = "emu-" + strconv.Itoa(to)
	}
	return from, to, next, nil
}

func (e *Emulator) eventsListRules(req *request) (any, *apiError) {
	var in struct {
		NamePrefix, EventBusName, NextToken string
		Limit                               *int
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if aerr := e.checkBus(in.EventBusName); aerr != nil {
		return nil, aerr
	}
	var rules []EventRule
	for _, r := range e.EventRules() {
		if strings.HasPrefix(r.Name, in.NamePrefix) {
			rules = append(rules, r)
		}
	}
	from, to, next, aerr := eventsPage(in.Limit, in.NextToken, len(rules))
	if aerr != nil {
		return nil, aerr
	}
	out := map[string]any{"Rules": append([]EventRule{}, rules[from:to]...)}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

func (e *Emulator) eventsListTargetsByRule(req *request) (any, *apiError) {
	var in struct {
		Rule, EventBusName, NextToken string
		Limit                         *int
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if aerr := e.checkBus(in.EventBusName); aerr != nil {
		return nil, aerr
	}
	var targets []EventTarget
	found := false
	for _, r := range e.EventRules() {
		if r.Name == in.Rule {
			targets, found = r.Targets, true
		}
	}
	if !found {
		return nil, eventsNotFound("Rule %s does not exist on EventBus default.", in.Rule)
	}
	from, to, next, aerr := eventsPage(in.Limit, in.NextToken, len(targets))
	if aerr != nil {
		return nil, aerr
	}
	out := map[string]any{"Targets": append([]EventTarget{}, targets[from:to]...)}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}
