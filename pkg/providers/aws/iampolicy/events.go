package iampolicy

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
)

// QueuePolicy is the resource policy of the interruption queue: EventBridge
// (and SQS itself, for redrives) may send to it, and nothing may use it
// without TLS.
func QueuePolicy(p Params) Document {
	if p.QueueName == "" {
		p.QueueName = p.ClusterName
	}
	queue := fmt.Sprintf("arn:%s:sqs:%s:%s:%s", p.Partition, p.Region, p.AccountID, p.QueueName)
	return Document{Version: "2012-10-17", Statement: []Statement{
		{
			Sid: "AllowEventBridgeToSend", Effect: Allow,
			Principal: map[string]any{"Service": []string{"events.amazonaws.com", "sqs.amazonaws.com"}},
			Action:    []string{"sqs:SendMessage"},
			Resource:  []string{queue},
		},
		{
			Sid: "DenyInsecureTransport", Effect: Deny,
			Principal: "*",
			Action:    []string{"sqs:*"},
			Resource:  []string{queue},
			Condition: map[string]map[string]any{"Bool": {"aws:SecureTransport": "false"}},
		},
	}}
}

// EventRule is an EventBridge rule that forwards events to the
// interruption queue.
type EventRule struct {
	// Name is the rule name suffix (the full name is
	// dovetail-<cluster>-<Name>, see RuleName).
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Pattern     map[string]any `json:"eventPattern"`
}

// RuleName is the full rule name for a cluster.
func (r EventRule) RuleName(cluster string) string { return "dovetail-" + cluster + "-" + r.Name }

// EventRules are the four rules the interruption handler needs; each
// pattern selects exactly the events package messages turns into a
// message kind.
func EventRules() []EventRule {
	rule := func(name, desc, source, detailType string) EventRule {
		return EventRule{Name: name, Description: desc, Pattern: map[string]any{
			"source": []string{source}, "detail-type": []string{detailType},
		}}
	}
	return []EventRule{
		rule("SpotInterruption", "Two-minute warnings before EC2 reclaims a spot instance",
			messages.SourceEC2, messages.DetailTypeSpotInterruption),
		rule("Rebalance", "EC2 rebalance recommendations: a spot instance is at elevated risk of interruption",
			messages.SourceEC2, messages.DetailTypeRebalance),
		rule("InstanceStateChange", "Instance state changes (stopping, stopped, shutting-down, terminated)",
			messages.SourceEC2, messages.DetailTypeStateChange),
		rule("ScheduledChange", "AWS Health scheduled changes (e.g. instance retirement)",
			messages.SourceHealth, messages.DetailTypeHealthEvent),
	}
}
