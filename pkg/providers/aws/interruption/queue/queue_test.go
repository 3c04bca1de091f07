package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/queue"
)

// TestEmulatorInterruptions raises every interruption kind the emulator
// knows on its own instance, then receives and parses the queue's
// messages: the emulator writes the events independently of this code, so
// this checks the parser against a second implementation of the format.
func TestEmulatorInterruptions(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{Seed: 5})
	ids := awstest.Launch(t, e, 5)
	want := map[string]struct {
		kind  messages.Kind
		state string
		event string
	}{
		ids[0]: {messages.KindSpotInterruption, "", awsemu.KindSpotInterruption},
		ids[1]: {messages.KindRebalanceRecommendation, "", awsemu.KindRebalance},
		ids[2]: {messages.KindScheduledChange, "", awsemu.KindScheduledChange},
		ids[3]: {messages.KindStateChange, messages.StateStopping, awsemu.KindStopping},
		ids[4]: {messages.KindStateChange, messages.StateTerminated, awsemu.KindTerminated},
	}
	for id, w := range want {
		if err := e.Interrupt(id, w.event); err != nil {
			t.Fatalf("Interrupt(%s, %s): %v", id, w.event, err)
		}
	}
	q := queue.New(awstest.Clients(e).SQS, awstest.ClusterName, queue.Options{WaitSeconds: 1})
	ctx := context.Background()
	got := map[string]*messages.Message{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		msgs, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.ParseErr != nil {
				t.Errorf("message %s does not parse: %v\n%s", m.ID, m.ParseErr, m.Body)
				continue
			}
			if m.Parsed.Kind == messages.KindUnknown {
				continue // e.g. other state changes; not what we raised
			}
			for _, id := range m.Parsed.InstanceIDs {
				if _, ok := want[id]; ok && (m.Parsed.Kind != messages.KindStateChange || m.Parsed.State == want[id].state) {
					got[id] = m.Parsed
				}
			}
			if err := q.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id, w := range want {
		m := got[id]
		if m == nil {
			t.Errorf("no %s message for %s", w.kind, id)
			continue
		}
		if m.Kind != w.kind || m.State != w.state {
			t.Errorf("%s: got %s/%q, want %s/%q", id, m.Kind, m.State, w.kind, w.state)
		}
	}
}

func TestReceiveEmptyAndDelete(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{})
	q := queue.New(awstest.Clients(e).SQS, awstest.ClusterName, queue.Options{WaitSeconds: 1})
	ctx := context.Background()
	msgs, err := q.Receive(ctx)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("empty queue: %v, %v", msgs, err)
	}
	if _, err := e.SendMessage(awstest.ClusterName, "not json"); err != nil {
		t.Fatal(err)
	}
	msgs, err = q.Receive(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Receive = %v, %v", msgs, err)
	}
	if !errors.Is(msgs[0].ParseErr, messages.ErrMalformed) {
		t.Errorf("ParseErr = %v, want ErrMalformed", msgs[0].ParseErr)
	}
	if err := q.Delete(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.New(awstest.Clients(e).SQS, "no-such-queue", queue.Options{}).Receive(ctx); err == nil || !strings.Contains(err.Error(), "no-such-queue") {
		t.Errorf("missing queue: %v", err)
	}
}

// The EventBridge messages become provider-neutral events.
func TestToEvent(t *testing.T) {
	for _, tc := range []struct {
		body string
		kind cloudprovider.InterruptionKind
		bad  bool
	}{
		{`{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`, cloudprovider.InterruptionSpot, false},
		{`{"version":"0","id":"2","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","state":"stopping"}}`, cloudprovider.InterruptionStopping, false},
		{`{"version":"0","id":"3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","state":"terminated"}}`, cloudprovider.InterruptionTerminating, false},
		{`{"version":"0","id":"4","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","state":"running"}}`, cloudprovider.InterruptionOther, false},
		{`{"version":"0","id":"5","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2025-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0"}}`, cloudprovider.InterruptionRebalance, false},
		{`not an event`, "", true},
	} {
		parsed, err := messages.Parse([]byte(tc.body))
		ev := queue.ToEvent(queue.Message{ID: "m", ReceiptHandle: "r", Body: tc.body, Parsed: parsed, ParseErr: err})
		if (ev.Malformed != nil) != tc.bad || ev.Kind != tc.kind || ev.Receipt != "r" {
			t.Errorf("%.40s: event %+v, want kind %q malformed %v", tc.body, ev, tc.kind, tc.bad)
		}
		if !tc.bad && (len(ev.InstanceIDs) != 1 || ev.InstanceIDs[0] != "i-0123456789abcdef0" || ev.Time.IsZero()) {
			t.Errorf("%.40s: event %+v", tc.body, ev)
		}
	}
}

// Messages about another account or region are ignored: logged, counted,
// deleted and not returned; the controller's own come through.
func TestForeignMessagesAreIgnored(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{Seed: 3})
	ids := awstest.Launch(t, e, 1)
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	q := queue.New(awstest.Clients(e).SQS, awstest.ClusterName, queue.Options{WaitSeconds: 1, Log: log})
	ctx := context.Background()
	body := func(account, region string) string {
		return fmt.Sprintf(`{"version":"0","id":"ev-%s-%s","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":%q,"time":"2026-11-30T04:00:00Z","region":%q,"resources":[],"detail":{"instance-id":%q,"instance-action":"terminate"}}`,
			account, region, account, region, ids[0])
	}
	for _, b := range []string{body("444455556666", e.Options().Region), body(e.Options().AccountID, "eu-west-1")} {
		if _, err := e.SendMessage(awstest.ClusterName, b); err != nil {
			t.Fatal(err)
		}
	}
	// A rebalance recommendation changes nothing on the instance, so no
	// later state-change message joins the queue.
	if err := e.Interrupt(ids[0], awsemu.KindRebalance); err != nil {
		t.Fatal(err)
	}
	var got []queue.Message
	deadline := time.Now().Add(20 * time.Second)
	for (len(got) == 0 || q.Ignored("account")+q.Ignored("region") < 2) && time.Now().Before(deadline) {
		msgs, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Parsed != nil && m.Parsed.Kind == messages.KindRebalanceRecommendation {
				got = append(got, m)
			}
			if err := q.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if acct, region := q.Origin(); acct != e.Options().AccountID || region != e.Options().Region {
		t.Errorf("origin %s/%s, want the emulator's %s/%s (from the queue URL and the client)", acct, region, e.Options().AccountID, e.Options().Region)
	}
	if len(got) != 1 || got[0].Parsed.Account != e.Options().AccountID || got[0].Parsed.Region != e.Options().Region {
		t.Fatalf("rebalance messages returned: %+v; want only the emulator's own", got)
	}
	if a, r := q.Ignored("account"), q.Ignored("region"); a != 1 || r != 1 {
		t.Errorf("ignored account=%v region=%v, want 1 and 1", a, r)
	}
	joined := strings.Join(logged, "\n")
	for _, want := range []string{`"account"="444455556666"`, `"region"="eu-west-1"`, `"want"="` + e.Options().AccountID + `"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("log %q lacks %s", joined, want)
		}
	}
	// The ignored messages were deleted: nothing is left on the queue.
	if msgs, err := q.Receive(ctx); err != nil || len(msgs) != 0 {
		t.Errorf("queue after: %+v %v", msgs, err)
	}
	if a := q.Ignored("account"); a != 1 {
		t.Errorf("an ignored message came back: ignored account=%v", a)
	}

	// A configured account wins over the URL's: now the emulator's own
	// messages are foreign.
	q2 := queue.New(awstest.Clients(e).SQS, awstest.ClusterName, queue.Options{WaitSeconds: 1, AccountID: "999988887777"})
	if err := e.Interrupt(ids[0], awsemu.KindScheduledChange); err != nil {
		t.Fatal(err)
	}
	for q2.Ignored("account") == 0 && time.Now().Before(deadline) {
		msgs, err := q2.Receive(ctx)
		if err != nil || len(msgs) != 0 {
			t.Fatalf("Receive with another account configured = %+v, %v; want nothing", msgs, err)
		}
	}
	if q2.Ignored("account") != 1 {
		t.Errorf("ignored %v, want 1", q2.Ignored("account"))
	}
}
