package migrate

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// The repository's own four rules (docs/iam/event-rules.json) each route
// exactly their kind; narrower, wider and operator patterns are judged as
// EventBridge would.
func TestPatternKinds(t *testing.T) {
	data, err := os.ReadFile("../../docs/iam/event-rules.json")
	if err != nil {
		t.Fatal(err)
	}
	var rules []struct {
		Name    string         `json:"name"`
		Pattern map[string]any `json:"eventPattern"`
	}
	if err := json.Unmarshal(data, &rules); err != nil || len(rules) != 4 {
		t.Fatalf("event-rules.json: %d rules, %v", len(rules), err)
	}
	want := map[string]EventKind{"SpotInterruption": EventSpotInterruption, "Rebalance": EventRebalance, "InstanceStateChange": EventStateChange, "ScheduledChange": EventScheduledChange}
	for _, r := range rules {
		p, _ := json.Marshal(r.Pattern)
		got, err := PatternKinds(string(p), "111122223333", "us-east-1")
		if err != nil || !slices.Equal(got, []EventKind{want[r.Name]}) {
			t.Errorf("%s: %v, %v; want [%s]", r.Name, got, err, want[r.Name])
		}
	}
	for _, tc := range []struct {
		name, pattern string
		want          []EventKind
	}{
		{"every EC2 event", `{"source":["aws.ec2"]}`, []EventKind{EventSpotInterruption, EventRebalance, EventStateChange}},
		{"two detail types", `{"source":["aws.ec2"],"detail-type":["EC2 Spot Instance Interruption Warning","EC2 Instance Rebalance Recommendation"]}`, []EventKind{EventSpotInterruption, EventRebalance}},
		{"only terminated states", `{"source":["aws.ec2"],"detail-type":["EC2 Instance State-change Notification"],"detail":{"state":["terminated"]}}`, nil},
		{"every leaving state", `{"detail-type":["EC2 Instance State-change Notification"],"detail":{"state":["stopping","stopped","shutting-down","terminated"]}}`, []EventKind{EventStateChange}},
		{"health for EC2 scheduled changes", `{"source":["aws.health"],"detail":{"service":["EC2"],"eventTypeCategory":["scheduledChange"]}}`, []EventKind{EventScheduledChange}},
		{"health for another service", `{"source":["aws.health"],"detail":{"service":["RDS"]}}`, nil},
		{"prefix", `{"source":[{"prefix":"aws.e"}],"detail-type":[{"prefix":"EC2 Spot"}]}`, []EventKind{EventSpotInterruption}},
		{"anything-but", `{"source":["aws.ec2"],"detail-type":[{"anything-but":["EC2 Instance Rebalance Recommendation","EC2 Instance State-change Notification"]}]}`, []EventKind{EventSpotInterruption}},
		{"exists", `{"source":["aws.ec2"],"detail":{"instance-action":[{"exists":true}]}}`, []EventKind{EventSpotInterruption}},
		{"another account", `{"source":["aws.ec2"],"account":["444455556666"]}`, nil},
		{"this account", `{"source":["aws.ec2"],"account":["111122223333"],"detail-type":["EC2 Spot Instance Interruption Warning"]}`, []EventKind{EventSpotInterruption}},
		{"an operator not evaluated", `{"source":["aws.ec2"],"detail-type":[{"wildcard":"EC2 *"}]}`, nil},
	} {
		got, err := PatternKinds(tc.pattern, "111122223333", "us-east-1")
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := PatternKinds("{nope", "1", "r"); err == nil {
		t.Error("a pattern that is not JSON was accepted")
	}
}

func TestQueueARN(t *testing.T) {
	for _, tc := range []struct{ url, region, arn string }{
		{"https://sqs.us-east-1.amazonaws.com/111122223333/prod", "us-east-1", "arn:aws:sqs:us-east-1:111122223333:prod"},
		{"http://127.0.0.1:4566/111122223333/dev", "us-west-2", "arn:aws:sqs:us-west-2:111122223333:dev"},
		{"https://sqs.cn-north-1.amazonaws.com.cn/111122223333/q", "cn-north-1", "arn:aws-cn:sqs:cn-north-1:111122223333:q"},
		{"https://sqs.us-gov-west-1.amazonaws.com/111122223333/q", "us-gov-west-1", "arn:aws-us-gov:sqs:us-gov-west-1:111122223333:q"},
		{"https://example.com/q", "us-east-1", ""},
	} {
		if got, _ := QueueARN(tc.url, tc.region); got != tc.arn {
			t.Errorf("QueueARN(%s) = %q, want %q", tc.url, got, tc.arn)
		}
	}
}
