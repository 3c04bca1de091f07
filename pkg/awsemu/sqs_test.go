package awsemu_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

func queueURL(t testing.TB, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func TestSQSLongPollReturnsWhenAMessageArrives(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := sqs.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	url := queueURL(t, c, "local")

	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20, MaxNumberOfMessages: 10})
		done <- result{out, err}
	}()
	// Send only once the poll is waiting: it must not have returned yet.
	select {
	case r := <-done:
		t.Fatalf("the long poll returned before any message: %+v %v", r.out, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"hello":"world"}`),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("test")}}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(sent.MD5OfMessageAttributes) == "" {
		t.Error("no attribute digest")
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not return within 5s of the message")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != `{"hello":"world"}` || aws.ToString(r.out.Messages[0].MessageId) != aws.ToString(sent.MessageId) {
		t.Fatalf("received %+v", r.out.Messages)
	}
	// Invisible for the visibility timeout, then deleted for good.
	again, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(again.Messages) != 0 {
		t.Fatalf("a received message was visible again at once: %v %+v", err, again.Messages)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: r.out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("bogus")})
	var bad *sqstypes.ReceiptHandleIsInvalid
	if !errors.As(err, &bad) {
		t.Errorf("bogus receipt handle: %v", err)
	}
}

func TestSQSVisibilityTimeoutOnTheInjectedClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk})
	c := sqs.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	url := queueURL(t, c, "local")
	for _, body := range []string{"a", "b", "c"} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 2, VisibilityTimeout: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil || len(first.Messages) != 2 {
		t.Fatalf("first receive: %v %+v", err, first)
	}
	rest, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil || len(rest.Messages) != 1 || aws.ToString(rest.Messages[0].Body) != "c" {
		t.Fatalf("second receive: %v %+v", err, rest)
	}
	clk.Step(10 * time.Second)
	back, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Messages) != 2 {
		t.Fatalf("after the visibility timeout %d messages are back, want 2", len(back.Messages))
	}
	if got := back.Messages[0].Attributes["ApproximateReceiveCount"]; got != "2" {
		t.Errorf("receive count %q, want 2", got)
	}
	// A long poll on the fake clock returns when the clock passes its wait.
	done := make(chan int, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20, VisibilityTimeout: 0})
		if err != nil {
			done <- -1
			return
		}
		done <- len(out.Messages)
	}()
	// The poll waits on a clock timer (the emulator's own timer loop may
	// hold one too); step only once it does.
	eventually(t, 5*time.Second, "the long poll to wait on the clock", func() bool { return clk.Waiters() >= 1 })
	clk.Step(2 * time.Minute) // past 20 s and past every visibility timeout
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("the long poll returned %d messages, want the one now visible", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not return after the clock passed its wait")
	}
	// Messages older than the queue's retention (300 s) are gone.
	clk.Step(5 * time.Minute)
	gone, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 0})
	if err != nil || len(gone.Messages) != 0 {
		t.Errorf("after retention: %v %d messages", err, len(gone.Messages))
	}
}

func TestSQSErrors(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := sqs.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	url := queueURL(t, c, "local")
	_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	var qdne *sqstypes.QueueDoesNotExist
	if !errors.As(err, &qdne) {
		t.Errorf("unknown queue: %v", err)
	}
	if code := apiCode(t, err); code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("unknown queue code %q", code)
	}
	_, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11})
	if code := apiCode(t, err); code != "InvalidParameterValue" {
		t.Errorf("11 messages: %q", code)
	}
	_, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 21})
	if code := apiCode(t, err); code != "InvalidParameterValue" {
		t.Errorf("wait 21 s: %q", code)
	}
	out := boto(t, e, `
sqs = client('sqs')
out['queue'] = code(sqs.get_queue_url, QueueName='nope')
url = sqs.get_queue_url(QueueName='local')['QueueUrl']
sqs.send_message(QueueUrl=url, MessageBody='from boto3')
r = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
out['body'] = r['Messages'][0]['Body']
sqs.delete_message(QueueUrl=url, ReceiptHandle=r['Messages'][0]['ReceiptHandle'])
out['max'] = code(sqs.receive_message, QueueUrl=url, MaxNumberOfMessages=0)
`)
	if out["queue"] != "AWS.SimpleQueueService.NonExistentQueue" || out["body"] != "from boto3" || out["max"] != "InvalidParameterValue" {
		t.Errorf("boto3: %v", out)
	}
	if code := cliCode(t, e, "sqs", "get-queue-url", "--queue-name", "nope"); code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("aws sqs get-queue-url: %q", code)
	}
}

// receiveEvent long-polls the interruption queue for one EventBridge event.
func receiveEvent(t testing.TB, c *sqs.Client, url string) awsemu.Event {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("%d messages, want 1", len(out.Messages))
	}
	var ev awsemu.Event
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &ev); err != nil {
		t.Fatalf("message is not an EventBridge event: %v", err)
	}
	if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestInterruptionEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1})
	cfg := sdkConfig(e)
	c := ec2.NewFromConfig(cfg)
	q := sqs.NewFromConfig(cfg)
	url := queueURL(t, q, "local")
	lt := launchTemplate(t, e, c, "interrupt", "x86_64", "")

	cases := []struct {
		kind       string
		detailType string
		source     string
		detail     map[string]any
		state      string // instance state right after the interruption
	}{
		{awsemu.KindSpotInterruption, "EC2 Spot Instance Interruption Warning", "aws.ec2", map[string]any{"instance-action": "terminate"}, "running"},
		{awsemu.KindRebalance, "EC2 Instance Rebalance Recommendation", "aws.ec2", map[string]any{}, "running"},
		{awsemu.KindStopping, "EC2 Instance State-change Notification", "aws.ec2", map[string]any{"state": "stopping"}, "stopping"},
		{awsemu.KindTerminated, "EC2 Instance State-change Notification", "aws.ec2", map[string]any{"state": "terminated"}, "terminated"},
		{awsemu.KindScheduledChange, "AWS Health Event", "aws.health", map[string]any{"service": "EC2", "eventTypeCategory": "scheduledChange"}, "running"},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			id := launchOne(t, e, c, lt, "m5.large", "spot", nil)
			clk.Step(2 * time.Second)
			if s := stateOf(t, c, id); s != "running" {
				t.Fatalf("instance %s", s)
			}
			node := e.Instances()[len(e.Instances())-1].PrivateDNSName
			if err := e.Interrupt(node, tc.kind); err != nil { // by node name
				t.Fatal(err)
			}
			ev := receiveEvent(t, q, url)
			if ev.DetailType != tc.detailType || ev.Source != tc.source || ev.Version != "0" || ev.Account != "111122223333" || ev.Region != "us-east-1" {
				t.Errorf("envelope %+v", ev)
			}
			if tm, err := time.Parse(time.RFC3339, ev.Time); err != nil || !tm.Equal(clk.Now().Truncate(time.Second)) {
				t.Errorf("time %q (clock %v): %v", ev.Time, clk.Now(), err)
			}
			var detail map[string]any
			if err := json.Unmarshal(ev.Detail, &detail); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.detail {
				if detail[k] != v {
					t.Errorf("detail %s=%v, want %v", k, detail[k], v)
				}
			}
			if tc.source == "aws.health" {
				ents, _ := detail["affectedEntities"].([]any)
				if len(ents) != 1 || ents[0].(map[string]any)["entityValue"] != id {
					t.Errorf("affected entities %v", detail["affectedEntities"])
				}
			} else if detail["instance-id"] != id || len(ev.Resources) != 1 || ev.Resources[0] != "arn:aws:ec2:us-east-1:111122223333:instance/"+id {
				t.Errorf("instance-id %v resources %v", detail["instance-id"], ev.Resources)
			}
			if s := stateOf(t, c, id); s != tc.state {
				t.Errorf("after %s the instance is %s, want %s", tc.kind, s, tc.state)
			}
			if tc.kind == awsemu.KindSpotInterruption {
				clk.Step(awsemu.SpotInterruptionNotice - time.Second)
				if s := stateOf(t, c, id); s != "running" {
					t.Errorf("before the notice ends: %s", s)
				}
				clk.Step(time.Second)
				if s := stateOf(t, c, id); s != "shutting-down" {
					t.Errorf("when the notice ends: %s, want shutting-down", s)
				}
			}
		})
	}
	if err := e.Interrupt("i-0123456789abcdef0", awsemu.KindRebalance); !errors.Is(err, awsemu.ErrUnknownTarget) {
		t.Errorf("unknown target: %v", err)
	}
	if err := e.Interrupt(e.Instances()[0].ID, "meteor"); !errors.Is(err, awsemu.ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
}
