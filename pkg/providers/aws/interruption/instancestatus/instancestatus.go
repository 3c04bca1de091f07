package instancestatus

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// Codes are the scheduled event codes reported: the changes that stop,
// retire or reboot the instance.
var Codes = []ec2types.EventCode{
	ec2types.EventCodeInstanceRetirement, ec2types.EventCodeInstanceStop,
	ec2types.EventCodeInstanceReboot, ec2types.EventCodeSystemReboot,
}

// Events polls DescribeInstanceStatus, and the account's Capacity Blocks
// for those about to end.
type Events struct {
	EC2 *ec2.Client
	// Clock tells when a Capacity Block's end is near (default the real
	// clock).
	Clock clock.PassiveClock
}

var _ cloudprovider.ScheduledEvents = (*Events)(nil)

// ScheduledEvents returns one event per scheduled change of a running
// instance, with EC2's event id, its code as State and its start as
// NotBefore, and one per Capacity Block whose end is within
// CapacityBlockWarning, with its instances (see capacityBlockEvents).
func (s *Events) ScheduledEvents(ctx context.Context) ([]cloudprovider.InterruptionEvent, error) {
	out, err := s.instanceEvents(ctx)
	if err != nil {
		return nil, err
	}
	var now time.Time
	if s.Clock != nil {
		now = s.Clock.Now()
	} else {
		now = time.Now()
	}
	blocks, err := s.capacityBlockEvents(ctx, now)
	if err != nil {
		return nil, err
	}
	return append(out, blocks...), nil
}

func (s *Events) instanceEvents(ctx context.Context) ([]cloudprovider.InterruptionEvent, error) {
	codes := make([]string, len(Codes))
	for i, c := range Codes {
		codes[i] = string(c)
	}
	p := ec2.NewDescribeInstanceStatusPaginator(s.EC2, &ec2.DescribeInstanceStatusInput{
		Filters:    []ec2types.Filter{{Name: aws.String("event.code"), Values: codes}},
		MaxResults: aws.Int32(1000),
	})
	var out []cloudprovider.InterruptionEvent
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance status: %w", err)
		}
		for _, st := range page.InstanceStatuses {
			id := aws.ToString(st.InstanceId)
			for _, ev := range st.Events {
				if !Reported(ev) {
					continue
				}
				e := cloudprovider.InterruptionEvent{
					ID: aws.ToString(ev.InstanceEventId), Kind: cloudprovider.InterruptionScheduledChange,
					State: string(ev.Code), InstanceIDs: []string{id},
				}
				if ev.NotBefore != nil {
					e.NotBefore = *ev.NotBefore
				}
				if e.ID == "" {
					e.ID = id + "/" + string(ev.Code)
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// Reported says whether an event is one ScheduledEvents reports: a code of
// Codes, neither done nor called off.
func Reported(ev ec2types.InstanceStatusEvent) bool {
	d := aws.ToString(ev.Description)
	if strings.HasPrefix(d, "[Completed]") || strings.HasPrefix(d, "[Canceled]") {
		return false
	}
	for _, c := range Codes {
		if ev.Code == c {
			return true
		}
	}
	return false
}
