package queue

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
)

// Defaults.
const (
	// DefaultWaitSeconds is the long-poll wait (SQS's maximum).
	DefaultWaitSeconds = 20
	// DefaultMaxMessages per receive (SQS's maximum).
	DefaultMaxMessages = 10
)

// Options configure a Queue.
type Options struct {
	// WaitSeconds is the long-poll wait, 0..20 (default 20).
	WaitSeconds int32
	// MaxMessages per receive, 1..10 (default 10).
	MaxMessages int32
	// AccountID and Region are the controller's: messages about another
	// account or region are ignored (logged, counted in
	// dovetail_interruption_ignored_messages_total and deleted, never
	// returned). AccountID defaults to the account in the queue's URL
	// (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), Region to the SQS
	// client's region.
	AccountID string
	Region    string
	// Log receives one line per ignored message. Default: discard.
	Log logr.Logger
}

// IgnoredMetric is the name of the counter of ignored messages, labelled by
// reason ("account" or "region").
const IgnoredMetric = "dovetail_interruption_ignored_messages_total"

// Queue is one SQS queue, found by name. It is safe for concurrent use.
type Queue struct {
	client *sqs.Client
	name   string
	opts   Options

	ignored *prometheus.CounterVec

	mu      sync.Mutex
	url     string
	account string
}

// New returns a Queue for the named queue; nothing is called until first
// use.
func New(client *sqs.Client, name string, o Options) *Queue {
	if o.WaitSeconds <= 0 || o.WaitSeconds > 20 {
		o.WaitSeconds = DefaultWaitSeconds
	}
	if o.MaxMessages <= 0 || o.MaxMessages > 10 {
		o.MaxMessages = DefaultMaxMessages
	}
	if o.Region == "" {
		o.Region = client.Options().Region
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	ignored := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: IgnoredMetric,
		Help: "Interruption messages ignored because they are about another AWS account or region than the controller's, by reason (account, region).",
	}, []string{"reason"})
	return &Queue{client: client, name: name, opts: o, ignored: ignored, account: o.AccountID}
}

// Collectors are the queue's metrics, for the operator to register.
func (q *Queue) Collectors() []prometheus.Collector { return []prometheus.Collector{q.ignored} }

// Ignored counts the messages ignored so far for a reason ("account" or
// "region").
func (q *Queue) Ignored(reason string) float64 {
	var m dto.Metric
	if err := q.ignored.WithLabelValues(reason).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Origin is the account and region messages must be about ("" when
// unknown yet: before the first URL lookup, or with a queue URL that names
// no account).
func (q *Queue) Origin() (account, region string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.account, q.opts.Region
}

// accountOf returns the account id of a queue URL's path (/ACCOUNT/NAME),
// "" when it has none.
func accountOf(queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || len(parts[0]) != 12 {
		return ""
	}
	for _, c := range parts[0] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return parts[0]
}

// URL returns the queue URL (GetQueueUrl once, then cached).
func (q *Queue) URL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	out, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
	if err != nil {
		return "", fmt.Errorf("finding interruption queue %q: %w", q.name, err)
	}
	q.url = aws.ToString(out.QueueUrl)
	if q.account == "" {
		q.account = accountOf(q.url)
		if q.account == "" {
			q.opts.Log.Info("the interruption queue's URL names no account; messages are not checked against an account", "queue", q.name, "url", q.url)
		}
	}
	return q.url, nil
}

// Message is one received message.
type Message struct {
	ID            string
	ReceiptHandle string
	Body          string
	// Parsed is the parsed body; nil when ParseErr is set.
	Parsed   *messages.Message
	ParseErr error
}

// Receive long-polls for messages. An empty result with a nil error means
// the wait ended without messages. Messages about another account or
// region than the queue's (Options.AccountID, Options.Region) are logged,
// counted, deleted and left out.
func (q *Queue) Receive(ctx context.Context) ([]Message, error) {
	url, err := q.URL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: q.opts.MaxMessages, WaitTimeSeconds: q.opts.WaitSeconds,
	})
	if err != nil {
		return nil, fmt.Errorf("receiving from %q: %w", q.name, err)
	}
	account, region := q.Origin()
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		body := aws.ToString(m.Body)
		parsed, perr := messages.Parse([]byte(body))
		msg := Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: body, Parsed: parsed, ParseErr: perr}
		if parsed != nil {
			var fe *messages.ForeignError
			if err := parsed.CheckOrigin(account, region); errors.As(err, &fe) {
				q.ignore(ctx, msg, fe)
				continue
			}
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// ignore logs, counts and deletes a message about another account or
// region. A failed delete is logged; the message comes back and is ignored
// again.
func (q *Queue) ignore(ctx context.Context, m Message, fe *messages.ForeignError) {
	q.ignored.WithLabelValues(fe.Field).Inc()
	q.opts.Log.Info("ignoring an interruption message for another "+fe.Field, "id", m.ID, "eventID", m.Parsed.ID,
		"detailType", m.Parsed.DetailType, fe.Field, fe.Got, "want", fe.Want, "instances", m.Parsed.InstanceIDs)
	if err := q.Delete(ctx, m); err != nil {
		q.opts.Log.Error(err, "deleting an ignored interruption message; it will be received again", "id", m.ID)
	}
}

// Delete removes a handled message from the queue.
func (q *Queue) Delete(ctx context.Context, m Message) error {
	url, err := q.URL(ctx)
	if err != nil {
		return err
	}
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(m.ReceiptHandle)}); err != nil {
		return fmt.Errorf("deleting message %s from %q: %w", m.ID, q.name, err)
	}
	return nil
}

// Events is the queue as a provider-neutral cloudprovider.InterruptionQueue.
func (q *Queue) Events() cloudprovider.InterruptionQueue { return events{q} }

type events struct{ q *Queue }

func (e events) Receive(ctx context.Context) ([]cloudprovider.InterruptionEvent, error) {
	msgs, err := e.q.Receive(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.InterruptionEvent, len(msgs))
	for i := range msgs {
		out[i] = ToEvent(msgs[i])
	}
	return out, nil
}

func (e events) Delete(ctx context.Context, ev cloudprovider.InterruptionEvent) error {
	return e.q.Delete(ctx, Message{ID: ev.ID, ReceiptHandle: ev.Receipt})
}

// ToEvent converts a queue message into a provider-neutral event.
func ToEvent(m Message) cloudprovider.InterruptionEvent {
	ev := cloudprovider.InterruptionEvent{ID: m.ID, Receipt: m.ReceiptHandle}
	if m.Parsed == nil {
		ev.Malformed = m.ParseErr
		if ev.Malformed == nil {
			ev.Malformed = errors.New("unparsed message")
		}
		return ev
	}
	p := m.Parsed
	ev.State, ev.InstanceIDs, ev.Time = p.State, p.InstanceIDs, p.Time
	switch p.Kind {
	case messages.KindSpotInterruption:
		ev.Kind = cloudprovider.InterruptionSpot
	case messages.KindRebalanceRecommendation:
		ev.Kind = cloudprovider.InterruptionRebalance
	case messages.KindScheduledChange:
		ev.Kind = cloudprovider.InterruptionScheduledChange
	case messages.KindStateChange:
		switch p.State {
		case messages.StateStopping, messages.StateStopped:
			ev.Kind = cloudprovider.InterruptionStopping
		case messages.StateShuttingDown, messages.StateTerminated:
			ev.Kind = cloudprovider.InterruptionTerminating
		default:
			ev.Kind = cloudprovider.InterruptionOther
		}
	default:
		ev.Kind = cloudprovider.InterruptionOther
	}
	return ev
}
