package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

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
}

// Queue is one SQS queue, found by name. It is safe for concurrent use.
type Queue struct {
	client *sqs.Client
	name   string
	opts   Options

	mu  sync.Mutex
	url string
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
	return &Queue{client: client, name: name, opts: o}
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
// the wait ended without messages.
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
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		body := aws.ToString(m.Body)
		parsed, perr := messages.Parse([]byte(body))
		msgs = append(msgs, Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: body, Parsed: parsed, ParseErr: perr})
	}
	return msgs, nil
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
