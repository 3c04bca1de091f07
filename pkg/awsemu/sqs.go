package awsemu

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var sqsOps = map[string]jsonHandler{
	"GetQueueUrl":    (*Emulator).sqsGetQueueURL,
	"SendMessage":    (*Emulator).sqsSendMessage,
	"ReceiveMessage": (*Emulator).sqsReceiveMessage,
	"DeleteMessage":  (*Emulator).sqsDeleteMessage,
}

// SQS limits the emulator enforces, as AWS does.
const (
	sqsMaxBody             = 256 * 1024
	sqsDefaultVisibility   = 30 * time.Second
	sqsRetention           = 300 * time.Second // the interruption queue's retention
	sqsMaxWaitSeconds      = 20
	sqsMaxVisibilitySecond = 43200
)

type queue struct {
	name       string
	url        string
	created    time.Time
	messages   []*sqsMessage
	retention  time.Duration
	visibility time.Duration
	// changed is closed and replaced whenever a message is added, so long
	// polls can wait for it.
	changed chan struct{}
}

type sqsAttribute struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

type sqsMessage struct {
	id            string
	body          string
	attrs         map[string]sqsAttribute
	sent          time.Time
	visibleAt     time.Time
	receipt       string
	receiveCount  int
	firstReceived time.Time
}

func newQueue(name, url string, now time.Time) *queue {
	return &queue{name: name, url: url, created: now, retention: sqsRetention, visibility: sqsDefaultVisibility, changed: make(chan struct{})}
}

func sqsError(code, queryCode, msg string, args ...any) *apiError {
	return &apiError{Code: code, QueryCode: queryCode, Status: 400, Message: fmt.Sprintf(msg, args...)}
}

func errNoQueue() *apiError {
	return sqsError("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
}

func errSQSInvalid(msg string, args ...any) *apiError {
	return sqsError("InvalidParameterValue", "InvalidParameterValue", msg, args...)
}

// queueByURL finds a queue from its URL (any host: clients may rewrite it)
// or bare name. Callers hold mu.
func (e *Emulator) queueByURL(u string) (*queue, *apiError) {
	if u == "" {
		return nil, sqsError("MissingParameter", "MissingParameter", "The request must contain the parameter QueueUrl.")
	}
	name := u
	if i := strings.LastIndexByte(strings.TrimSuffix(u, "/"), '/'); i >= 0 {
		name = strings.TrimSuffix(u, "/")[i+1:]
	}
	q := e.acct.queues[name]
	if q == nil {
		return nil, errNoQueue()
	}
	return q, nil
}

// expire drops messages past the queue's retention. Callers hold mu.
func (q *queue) expire(now time.Time) {
	kept := q.messages[:0]
	for _, m := range q.messages {
		if now.Sub(m.sent) < q.retention {
			kept = append(kept, m)
		}
	}
	for i := len(kept); i < len(q.messages); i++ {
		q.messages[i] = nil
	}
	q.messages = kept
}

func (e *Emulator) sqsGetQueueURL(req *request) (any, *apiError) {
	var in struct {
		QueueName              string
		QueueOwnerAWSAccountId string
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if in.QueueName == "" {
		return nil, sqsError("MissingParameter", "MissingParameter", "The request must contain the parameter QueueName.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != e.opts.AccountID {
		return nil, errNoQueue()
	}
	q := e.acct.queues[in.QueueName]
	if q == nil {
		return nil, errNoQueue()
	}
	return map[string]string{"QueueUrl": q.url}, nil
}

func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// attributesMD5 is SQS's digest of message attributes: for each attribute
// in name order, the length-prefixed name, data type, a transport byte (1
// string/number, 2 binary) and the length-prefixed value.
func attributesMD5(attrs map[string]sqsAttribute) string {
	var buf []byte
	put := func(b []byte) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
	}
	for _, name := range sortedKeys(attrs) {
		a := attrs[name]
		put([]byte(name))
		put([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			buf = append(buf, 2)
			put(a.BinaryValue)
		} else {
			buf = append(buf, 1)
			put([]byte(a.StringValue))
		}
	}
	return md5Hex(buf)
}

func validateAttributes(attrs map[string]sqsAttribute) *apiError {
	if len(attrs) > 10 {
		return errSQSInvalid("Number of message attributes [%d] exceeds the allowed maximum [10].", len(attrs))
	}
	for name, a := range attrs {
		if name == "" || len(name) > 256 {
			return errSQSInvalid("Message attribute name '%s' is invalid.", name)
		}
		switch {
		case strings.HasPrefix(a.DataType, "String"), strings.HasPrefix(a.DataType, "Number"):
			if a.StringValue == "" {
				return errSQSInvalid("Message attribute '%s' must contain a non-empty value of type '%s'.", name, a.DataType)
			}
		case strings.HasPrefix(a.DataType, "Binary"):
			if len(a.BinaryValue) == 0 {
				return errSQSInvalid("Message attribute '%s' must contain a non-empty value of type 'Binary'.", name)
			}
		default:
			return errSQSInvalid("The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
		}
	}
	return nil
}

func (e *Emulator) sqsSendMessage(req *request) (any, *apiError) {
	var in struct {
		QueueUrl          string
		MessageBody       string
		DelaySeconds      *int
		MessageAttributes map[string]sqsAttribute
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if in.MessageBody == "" {
		return nil, sqsError("MissingParameter", "MissingParameter", "The request must contain the parameter MessageBody.")
	}
	if len(in.MessageBody) > sqsMaxBody {
		return nil, errSQSInvalid("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", sqsMaxBody)
	}
	delay := 0
	if in.DelaySeconds != nil {
		if *in.DelaySeconds < 0 || *in.DelaySeconds > 900 {
			return nil, errSQSInvalid("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", *in.DelaySeconds)
		}
		delay = *in.DelaySeconds
	}
	if aerr := validateAttributes(in.MessageAttributes); aerr != nil {
		return nil, aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	m := e.enqueue(q, in.MessageBody, in.MessageAttributes, time.Duration(delay)*time.Second)
	out := map[string]string{"MessageId": m.id, "MD5OfMessageBody": md5Hex([]byte(m.body))}
	if len(m.attrs) > 0 {
		out["MD5OfMessageAttributes"] = attributesMD5(m.attrs)
	}
	return out, nil
}

// enqueue adds a message and wakes long polls. Callers hold mu.
func (e *Emulator) enqueue(q *queue, body string, attrs map[string]sqsAttribute, delay time.Duration) *sqsMessage {
	now := e.clock.Now()
	q.expire(now)
	e.reqSeq++
	m := &sqsMessage{id: uuidFrom(uint64(e.opts.Seed)^0x5351, e.reqSeq), body: body, attrs: attrs, sent: now, visibleAt: now.Add(delay)}
	q.messages = append(q.messages, m)
	close(q.changed)
	q.changed = make(chan struct{})
	return m
}

type sqsMessageJSON struct {
	MessageId              string                  `json:"MessageId"`
	ReceiptHandle          string                  `json:"ReceiptHandle"`
	MD5OfBody              string                  `json:"MD5OfBody"`
	Body                   string                  `json:"Body"`
	Attributes             map[string]string       `json:"Attributes,omitempty"`
	MD5OfMessageAttributes string                  `json:"MD5OfMessageAttributes,omitempty"`
	MessageAttributes      map[string]sqsAttribute `json:"MessageAttributes,omitempty"`
}

func (e *Emulator) sqsReceiveMessage(req *request) (any, *apiError) {
	var in struct {
		QueueUrl                    string
		MaxNumberOfMessages         *int
		VisibilityTimeout           *int
		WaitTimeSeconds             *int
		AttributeNames              []string
		MessageSystemAttributeNames []string
		MessageAttributeNames       []string
		ReceiveRequestAttemptId     string
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	maxN := 1
	if in.MaxNumberOfMessages != nil {
		if *in.MaxNumberOfMessages < 1 || *in.MaxNumberOfMessages > 10 {
			return nil, errSQSInvalid("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *in.MaxNumberOfMessages)
		}
		maxN = *in.MaxNumberOfMessages
	}
	wait := 0
	if in.WaitTimeSeconds != nil {
		if *in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > sqsMaxWaitSeconds {
			return nil, errSQSInvalid("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= %d, if provided.", *in.WaitTimeSeconds, sqsMaxWaitSeconds)
		}
		wait = *in.WaitTimeSeconds
	}
	e.mu.Lock()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		e.mu.Unlock()
		return nil, aerr
	}
	visibility := q.visibility
	e.mu.Unlock()
	if in.VisibilityTimeout != nil {
		if *in.VisibilityTimeout < 0 || *in.VisibilityTimeout > sqsMaxVisibilitySecond {
			return nil, errSQSInvalid("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= %d, if provided.", *in.VisibilityTimeout, sqsMaxVisibilitySecond)
		}
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	wantAttrs := append(append([]string{}, in.AttributeNames...), in.MessageSystemAttributeNames...)

	deadline := e.clock.Now().Add(time.Duration(wait) * time.Second)
	for {
		e.mu.Lock()
		now := e.clock.Now()
		msgs, nextVisible := e.take(q, maxN, visibility, now, wantAttrs, in.MessageAttributeNames)
		changed := q.changed
		e.mu.Unlock()
		if len(msgs) > 0 || !now.Before(deadline) {
			out := map[string]any{}
			if len(msgs) > 0 {
				out["Messages"] = msgs
			}
			return out, nil
		}
		// Wait for a new message, a message becoming visible again, the
		// end of the long poll, or the client going away.
		until := deadline
		if !nextVisible.IsZero() && nextVisible.Before(until) {
			until = nextVisible
		}
		timer := e.clock.NewTimer(until.Sub(now))
		select {
		case <-changed:
		case <-timer.C():
		case <-req.ctx.Done():
			timer.Stop()
			return nil, newAPIError("RequestCanceled", 400, "the client went away")
		case <-e.closed:
			timer.Stop()
			return map[string]any{}, nil
		}
		timer.Stop()
	}
}

// take receives up to n visible messages. nextVisible is when the earliest
// invisible message becomes visible (zero if none). Callers hold mu.
func (e *Emulator) take(q *queue, n int, visibility time.Duration, now time.Time, wantAttrs, wantMsgAttrs []string) ([]sqsMessageJSON, time.Time) {
	q.expire(now)
	var out []sqsMessageJSON
	var nextVisible time.Time
	for _, m := range q.messages {
		if m.visibleAt.After(now) {
			if nextVisible.IsZero() || m.visibleAt.Before(nextVisible) {
				nextVisible = m.visibleAt
			}
			continue
		}
		if len(out) == n {
			continue
		}
		m.receiveCount++
		if m.firstReceived.IsZero() {
			m.firstReceived = now
		}
		m.visibleAt = now.Add(visibility)
		e.reqSeq++
		m.receipt = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s#%s#%d", q.name, m.id, e.reqSeq)))
		j := sqsMessageJSON{MessageId: m.id, ReceiptHandle: m.receipt, MD5OfBody: md5Hex([]byte(m.body)), Body: m.body}
		j.Attributes = systemAttributes(m, wantAttrs, e.opts.AccountID)
		if len(m.attrs) > 0 && len(wantMsgAttrs) > 0 {
			sel := map[string]sqsAttribute{}
			for name, a := range m.attrs {
				if containsFold(wantMsgAttrs, "All") || containsFold(wantMsgAttrs, ".*") || contains(wantMsgAttrs, name) {
					sel[name] = a
				}
			}
			if len(sel) > 0 {
				j.MessageAttributes = sel
				j.MD5OfMessageAttributes = attributesMD5(sel)
			}
		}
		out = append(out, j)
	}
	return out, nextVisible
}

func systemAttributes(m *sqsMessage, want []string, account string) map[string]string {
	if len(want) == 0 {
		return nil
	}
	all := map[string]string{
		"SenderId":                         account,
		"SentTimestamp":                    strconv.FormatInt(m.sent.UnixMilli(), 10),
		"ApproximateReceiveCount":          strconv.Itoa(m.receiveCount),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceived.UnixMilli(), 10),
	}
	out := map[string]string{}
	for _, w := range want {
		if w == "All" {
			return all
		}
		if v, ok := all[w]; ok {
			out[w] = v
		}
	}
	return out
}

func (e *Emulator) sqsDeleteMessage(req *request) (any, *apiError) {
	var in struct {
		QueueUrl      string
		ReceiptHandle string
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if in.ReceiptHandle == "" {
		return nil, sqsError("MissingParameter", "MissingParameter", "The request must contain the parameter ReceiptHandle.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q, aerr := e.queueByURL(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	raw, err := base64.RawURLEncoding.DecodeString(in.ReceiptHandle)
	if err != nil || !strings.HasPrefix(string(raw), q.name+"#") {
		return nil, sqsError("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", "The input receipt handle \"%s\" is not a valid receipt handle.", in.ReceiptHandle)
	}
	for i, m := range q.messages {
		if m.receipt == in.ReceiptHandle {
			q.messages = append(q.messages[:i], q.messages[i+1:]...)
			return map[string]any{}, nil
		}
	}
	// Deleting an already deleted (or expired) message succeeds, as in SQS.
	return map[string]any{}, nil
}

// SendMessage puts a message on a queue directly (for tests and the admin
// API), returning its id.
func (e *Emulator) SendMessage(queueName, body string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.acct.queues[queueName]
	if q == nil {
		return "", fmt.Errorf("awsemu: no queue named %q", queueName)
	}
	return e.enqueue(q, body, nil, 0).id, nil
}

// QueueURL returns the URL of a queue (the interruption queue is named after
// the cluster).
func (e *Emulator) QueueURL(queueName string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.acct.queues[queueName]
	if q == nil {
		return "", false
	}
	return q.url, true
}
