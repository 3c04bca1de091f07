package migrate

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
)

// EventKind is one kind of event the interruption queue must receive.
type EventKind string

// The four kinds of interruption event, each routed to the queue by an
// EventBridge rule (docs/aws.md).
const (
	EventSpotInterruption EventKind = "spot interruption"
	EventRebalance        EventKind = "rebalance recommendation"
	EventStateChange      EventKind = "instance state change"
	EventScheduledChange  EventKind = "scheduled change"
)

// EventKinds are the kinds, in the checklist's order.
var EventKinds = []EventKind{EventSpotInterruption, EventRebalance, EventStateChange, EventScheduledChange}

// samples are events of a kind, in EventBridge's envelope: a rule routes
// the kind when its pattern matches every sample (for state changes, one
// per state that takes an instance away).
func samples(kind EventKind, account, region string) []map[string]any {
	const id = "i-0123456789abcdef0"
	ev := func(source, detailType string, detail map[string]any) map[string]any {
		return map[string]any{"version": "0", "id": "00000000-0000-4000-8000-000000000000", "source": source, "detail-type": detailType,
			"account": account, "region": region, "time": "2026-01-01T00:00:00Z",
			"resources": []any{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", region, account, id)}, "detail": detail}
	}
	switch kind {
	case EventSpotInterruption:
		return []map[string]any{ev(messages.SourceEC2, messages.DetailTypeSpotInterruption, map[string]any{"instance-id": id, "instance-action": "terminate"})}
	case EventRebalance:
		return []map[string]any{ev(messages.SourceEC2, messages.DetailTypeRebalance, map[string]any{"instance-id": id})}
	case EventStateChange:
		var out []map[string]any
		for _, s := range []string{messages.StateStopping, messages.StateStopped, messages.StateShuttingDown, messages.StateTerminated} {
			out = append(out, ev(messages.SourceEC2, messages.DetailTypeStateChange, map[string]any{"instance-id": id, "state": s}))
		}
		return out
	case EventScheduledChange:
		return []map[string]any{ev(messages.SourceHealth, messages.DetailTypeHealthEvent, map[string]any{
			"service": "EC2", "eventTypeCategory": messages.HealthCategoryScheduledChange, "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"affectedEntities": []any{map[string]any{"entityValue": id}}})}
	}
	return nil
}

// PatternKinds returns the interruption kinds an EventBridge event pattern
// routes (its pattern matches every sample event of the kind, for the
// given account and region). It evaluates exact values, nested fields and
// the prefix, exists and anything-but operators; a field using another
// operator does not match. A pattern that is not a JSON object is an
// error.
func PatternKinds(pattern, account, region string) ([]EventKind, error) {
	var pat map[string]any
	if err := json.Unmarshal([]byte(pattern), &pat); err != nil {
		return nil, fmt.Errorf("event pattern is not a JSON object: %w", err)
	}
	var out []EventKind
	for _, k := range EventKinds {
		all := true
		for _, s := range samples(k, account, region) {
			all = all && matchPattern(pat, s)
		}
		if all {
			out = append(out, k)
		}
	}
	return out, nil
}

// matchPattern is EventBridge's matching: every field of the pattern must
// match the event's field of the same name.
func matchPattern(pat, ev map[string]any) bool {
	for k, pv := range pat {
		v, present := ev[k]
		switch p := pv.(type) {
		case map[string]any:
			sub, ok := v.(map[string]any)
			if !ok || !matchPattern(p, sub) {
				return false
			}
		case []any:
			if !matchValues(p, v, present) {
				return false
			}
		default:
			return false // not a valid pattern field
		}
	}
	return true
}

// matchValues matches one field against a pattern's list: any element
// matching any of the event's values (an event array matches element by
// element).
func matchValues(list []any, v any, present bool) bool {
	vals := []any{v}
	if arr, ok := v.([]any); ok {
		vals = arr
	}
	for _, want := range list {
		if op, ok := want.(map[string]any); ok {
			if e, ok := op["exists"].(bool); ok && len(op) == 1 {
				if e == present {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, got := range vals {
			if matchOne(want, got) {
				return true
			}
		}
	}
	return false
}

func matchOne(want, got any) bool {
	switch w := want.(type) {
	case string, float64, bool, nil:
		return w == got
	case map[string]any:
		if len(w) != 1 {
			return false
		}
		if p, ok := w["prefix"].(string); ok {
			s, isStr := got.(string)
			return isStr && strings.HasPrefix(s, p)
		}
		if ab, ok := w["anything-but"]; ok {
			switch x := ab.(type) {
			case []any:
				return !slices.Contains(x, got)
			case string, float64:
				return x != got
			}
		}
	}
	return false
}

// QueueARN is the ARN of an SQS queue from its URL
// (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME, or the emulator's
// http://HOST/ACCOUNT/NAME) and region; "" when the URL names no account.
func QueueARN(queueURL, region string) (arn, account string) {
	u, err := url.Parse(queueURL)
	if err != nil {
		return "", ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || len(parts[0]) != 12 {
		return "", ""
	}
	return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", Partition(region), region, parts[0], parts[1]), parts[0]
}

// Partition is the AWS partition of a region.
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}
