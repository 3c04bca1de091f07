package instancestatus

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// Capacity Block expiration: EC2 starts terminating a Capacity Block's
// instances CapacityBlockReclaim before its end and warns
// CapacityBlockWarning before it; from the warning on, each block's
// instances are reported as one scheduled change.
const (
	CapacityBlockWarning = 40 * time.Minute
	CapacityBlockReclaim = 30 * time.Minute
	// StateCapacityBlockExpiring is the State of a Capacity Block's
	// expiration event.
	StateCapacityBlockExpiring = "capacity-block-expiring"
	// capacityBlockEventPrefix starts the id of a block's event; the
	// reservation id follows.
	capacityBlockEventPrefix = "capacity-block-expiration/"
)

// capacityBlockEvents reports, for each active Capacity Block within
// CapacityBlockWarning of its end at now, its pending and running
// instances as one scheduled change, id capacity-block-expiration/CR-ID,
// NotBefore when EC2 starts terminating them. One DescribeCapacityReservations
// poll (active reservations), plus one DescribeInstances for the expiring
// blocks, if any.
func (s *Events) capacityBlockEvents(ctx context.Context, now time.Time) ([]cloudprovider.InterruptionEvent, error) {
	ends := map[string]time.Time{}
	var ids []string
	p := ec2.NewDescribeCapacityReservationsPaginator(s.EC2, &ec2.DescribeCapacityReservationsInput{
		Filters:    []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}},
		MaxResults: aws.Int32(1000),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing capacity reservations: %w", err)
		}
		for _, cr := range page.CapacityReservations {
			if cr.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || cr.EndDate == nil || now.Before(cr.EndDate.Add(-CapacityBlockWarning)) {
				continue
			}
			id := aws.ToString(cr.CapacityReservationId)
			ends[id] = *cr.EndDate
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	byBlock := map[string][]string{}
	ip := ec2.NewDescribeInstancesPaginator(s.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("capacity-reservation-id"), Values: ids},
		{Name: aws.String("instance-state-name"), Values: []string{string(ec2types.InstanceStateNamePending), string(ec2types.InstanceStateNameRunning)}},
	}})
	for ip.HasMorePages() {
		page, err := ip.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the instances of expiring capacity blocks: %w", err)
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				cr := aws.ToString(in.CapacityReservationId)
				byBlock[cr] = append(byBlock[cr], aws.ToString(in.InstanceId))
			}
		}
	}
	var out []cloudprovider.InterruptionEvent
	for _, id := range ids {
		if len(byBlock[id]) == 0 {
			continue
		}
		out = append(out, cloudprovider.InterruptionEvent{
			ID: capacityBlockEventPrefix + id, Kind: cloudprovider.InterruptionScheduledChange, State: StateCapacityBlockExpiring,
			NotBefore: ends[id].Add(-CapacityBlockReclaim), InstanceIDs: byBlock[id],
		})
	}
	return out, nil
}
