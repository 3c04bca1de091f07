package awsemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Interruption kinds accepted by Interrupt.
const (
	// KindSpotInterruption sends "EC2 Spot Instance Interruption Warning"
	// and terminates the instance SpotInterruptionNotice (x TimeScale) later.
	KindSpotInterruption = "spot-interruption"
	// KindRebalance sends "EC2 Instance Rebalance Recommendation" only.
	KindRebalance = "rebalance"
	// KindScheduledChange sends an AWS Health "AWS Health Event" of category
	// scheduledChange (instance retirement) for the instance.
	KindScheduledChange = "scheduled-change"
	// KindStopping stops the instance and sends "EC2 Instance State-change
	// Notification" with state stopping.
	KindStopping = "stopping"
	// KindTerminated terminates the instance at once and sends "EC2 Instance
	// State-change Notification" with state terminated.
	KindTerminated = "terminated"
)

// InterruptionKinds lists the kinds Interrupt accepts, sorted.
func InterruptionKinds() []string {
	k := []string{KindSpotInterruption, KindRebalance, KindScheduledChange, KindStopping, KindTerminated}
	sort.Strings(k)
	return k
}

// ErrInstanceGone is returned by Interrupt for an instance that is already
// shutting down or terminated.
var ErrInstanceGone = errors.New("awsemu: instance is already shutting down or terminated")

// Event is an EventBridge event as it arrives on the interruption queue.
type Event struct {
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

// Interrupt puts the EventBridge message of an interruption of the given
// kind on the interruption queue (named after the cluster) and applies its
// effect on the instance. target is an instance id, a private DNS name (the
// node name) or a provider id aws:///ZONE/ID.
func (e *Emulator) Interrupt(target, kind string) error {
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.poke()
	if !contains(InterruptionKinds(), kind) {
		return fmt.Errorf("%w %q: valid kinds are %s", ErrUnknownKind, kind, strings.Join(InterruptionKinds(), ", "))
	}
	in := e.findInstance(target)
	if in == nil {
		return fmt.Errorf("%w: %q", ErrUnknownTarget, target)
	}
	if in.State == StateShuttingDown || in.State == StateTerminated {
		return fmt.Errorf("%w: %s is %s", ErrInstanceGone, in.ID, in.State)
	}
	q := e.acct.queues[e.opts.ClusterName]
	if q == nil {
		return fmt.Errorf("awsemu: the interruption queue %q was deleted", e.opts.ClusterName)
	}
	now := e.clock.Now()
	instanceARN := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", e.opts.Region, e.opts.AccountID, in.ID)
	ev := Event{
		Version: "0", ID: uuidFrom(uint64(e.opts.Seed)^0x45564e54, e.rng.Uint64()), Account: e.opts.AccountID,
		Time: now.UTC().Format(time.RFC3339), Region: e.opts.Region, Source: "aws.ec2", Resources: []string{instanceARN},
	}
	var detail any
	switch kind {
	case KindSpotInterruption:
		ev.DetailType = "EC2 Spot Instance Interruption Warning"
		detail = map[string]string{"instance-id": in.ID, "instance-action": "terminate"}
		e.at(now.Add(e.scaled(SpotInterruptionNotice)), in.ID, timerSpotTerminate)
	case KindRebalance:
		ev.DetailType = "EC2 Instance Rebalance Recommendation"
		detail = map[string]string{"instance-id": in.ID}
	case KindScheduledChange:
		ev.DetailType = "AWS Health Event"
		ev.Source = "aws.health"
		ev.Resources = []string{in.ID}
		code := "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
		start := now.Add(14 * 24 * time.Hour).UTC()
		detail = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%s", e.opts.Region, code, code, ev.ID),
			"service":           "EC2",
			"eventTypeCode":     code,
			"eventTypeCategory": "scheduledChange",
			"startTime":         start.Format(time.RFC1123),
			"endTime":           start.Add(7 * 24 * time.Hour).Format(time.RFC1123),
			"eventDescription": []map[string]string{{
				"language":          "en_US",
				"latestDescription": fmt.Sprintf("EC2 has detected degradation of the underlying hardware hosting your instance %s; it is scheduled for retirement.", in.ID),
			}},
			"affectedEntities": []map[string]string{{"entityValue": in.ID}},
		}
	case KindStopping:
		ev.DetailType = "EC2 Instance State-change Notification"
		detail = map[string]string{"instance-id": in.ID, "state": StateStopping}
		e.transition(in, StateStopping, "Client.UserInitiatedShutdown: User initiated shutdown", now)
		e.at(now.Add(e.scaled(e.opts.ShutdownDelay)), in.ID, timerStop)
	case KindTerminated:
		ev.DetailType = "EC2 Instance State-change Notification"
		detail = map[string]string{"instance-id": in.ID, "state": StateTerminated}
		e.transition(in, StateShuttingDown, "Server.InstanceTerminated: Instance terminated by an injected interruption", now)
		e.transition(in, StateTerminated, "", now)
		e.at(now.Add(e.scaled(e.opts.TerminatedRetention)), in.ID, timerExpire)
	}
	ev.Detail, _ = json.Marshal(detail)
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("awsemu: encoding the %s event: %w", kind, err)
	}
	e.enqueue(q, string(body), nil, 0)
	return nil
}

// findInstance resolves an instance id, private DNS name or provider id.
// Callers hold mu.
func (e *Emulator) findInstance(target string) *instanceRec {
	if strings.HasPrefix(target, "aws:///") {
		target = target[strings.LastIndexByte(target, '/')+1:]
	}
	if in := e.acct.instances[target]; in != nil {
		return in
	}
	// The newest instance with that name: addresses are not reused, but be
	// safe.
	for i := len(e.acct.order) - 1; i >= 0; i-- {
		if in := e.acct.instances[e.acct.order[i]]; in != nil && in.PrivateDNSName == target {
			return in
		}
	}
	return nil
}
