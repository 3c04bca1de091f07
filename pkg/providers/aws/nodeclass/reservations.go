package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// ReasonCapacityReservationNotFound is the CapacityReservationsReady=False
// reason of a class whose term names a reservation id that does not exist
// or is not active.
const ReasonCapacityReservationNotFound = "CapacityReservationNotFound"

// Reservation types, the values of karpenter.k8s.aws/capacity-reservation-type.
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
)

// Reservation states of status.capacityReservations.
const (
	ReservationStateActive   = "active"
	ReservationStateExpiring = "expiring"
)

// CapacityBlockExpiration is how long before a Capacity Block's end its
// nodes are replaced and it is listed as expiring: EC2 starts terminating
// the block's instances 30 minutes before its end and warns 10 minutes
// before that (the peer's timing).
const CapacityBlockExpiration = 40 * time.Minute

// Expiring reports whether a reservation is a Capacity Block within
// CapacityBlockExpiration of its end at now: it takes no more launches and
// its nodes are replaced.
func Expiring(cr awsv1.CapacityReservation, now time.Time) bool {
	return cr.ReservationType == ReservationTypeCapacityBlock && cr.EndTime != nil && !now.Before(cr.EndTime.Add(-CapacityBlockExpiration))
}

// ReservationCount is what DescribeCapacityReservations says of one active
// reservation: the resolved status entry and how many instances it still
// holds.
type ReservationCount struct {
	Reservation awsv1.CapacityReservation
	Available   int
}

// CapacityReservations resolves capacity reservation selector terms into
// the active reservations they select, sorted by id, with their available
// counts. missing lists the ids of id terms that select no active
// reservation (unknown, cancelled or expired), each with its field path.
func (r *Resolver) CapacityReservations(ctx context.Context, terms []awsv1.CapacityReservationSelectorTerm) (found []ReservationCount, missing []string, err error) {
	byID := map[string]ReservationCount{}
	active := ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}
	for i, t := range terms {
		in := &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{active}}
		if t.ID != "" {
			in.CapacityReservationIds = []string{t.ID}
		} else {
			in.MaxResults = aws.Int32(1000)
			if t.OwnerID != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
			}
			if t.InstanceMatchCriteria != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{t.InstanceMatchCriteria}})
			}
			in.Filters = append(in.Filters, tagFilters(t.Tags)...)
		}
		n := 0
		p := ec2.NewDescribeCapacityReservationsPaginator(r.EC2, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			var api smithy.APIError
			if t.ID != "" && errors.As(err, &api) && api.ErrorCode() == "InvalidCapacityReservationId.NotFound" {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("describing capacity reservations: %w", err)
			}
			for _, cr := range page.CapacityReservations {
				rc := reservationCount(cr, r.now())
				byID[rc.Reservation.ID] = rc
				n++
			}
		}
		if t.ID != "" && n == 0 {
			missing = append(missing, fmt.Sprintf("%s (spec.capacityReservationSelectorTerms[%d].id)", t.ID, i))
		}
	}
	ids := slices.Sorted(maps.Keys(byID))
	for _, id := range ids {
		found = append(found, byID[id])
	}
	return found, missing, nil
}

func reservationCount(cr ec2types.CapacityReservation, now time.Time) ReservationCount {
	typ := string(cr.ReservationType)
	if typ == "" {
		typ = ReservationTypeDefault
	}
	out := awsv1.CapacityReservation{
		ID: aws.ToString(cr.CapacityReservationId), AvailabilityZone: aws.ToString(cr.AvailabilityZone),
		InstanceType: aws.ToString(cr.InstanceType), OwnerID: aws.ToString(cr.OwnerId),
		InstanceMatchCriteria: string(cr.InstanceMatchCriteria), ReservationType: typ,
		Interruptible: aws.ToBool(cr.Interruptible), State: ReservationStateActive,
	}
	if cr.EndDate != nil {
		t := metav1.NewTime(*cr.EndDate)
		out.EndTime = &t
	}
	if Expiring(out, now) {
		out.State = ReservationStateExpiring
	}
	return ReservationCount{Reservation: out, Available: int(aws.ToInt32(cr.AvailableInstanceCount))}
}

// capacityReservationsCondition sets status.capacityReservations and
// CapacityReservationsReady: True when every id term names an active
// reservation (or the class selects none), else False naming the ids.
func (r *Resolver) capacityReservationsStatus(ctx context.Context, nc, out *awsv1.EC2NodeClass) error {
	now := r.now()
	out.Status.CapacityReservations = nil
	if len(nc.Spec.CapacityReservationSelectorTerms) == 0 {
		out.SetCondition(awsv1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, ReasonResolved, "", now)
		return nil
	}
	found, missing, err := r.CapacityReservations(ctx, nc.Spec.CapacityReservationSelectorTerms)
	if err != nil {
		return err
	}
	for _, rc := range found {
		out.Status.CapacityReservations = append(out.Status.CapacityReservations, rc.Reservation)
	}
	sort.Slice(out.Status.CapacityReservations, func(i, j int) bool {
		return out.Status.CapacityReservations[i].ID < out.Status.CapacityReservations[j].ID
	})
	if len(missing) > 0 {
		out.SetCondition(awsv1.ConditionTypeCapacityReservationsReady, metav1.ConditionFalse, ReasonCapacityReservationNotFound,
			"no active capacity reservation has the id "+strings.Join(missing, ", ")+"; nodes launch into the others the terms select, if any", now)
		return nil
	}
	out.SetCondition(awsv1.ConditionTypeCapacityReservationsReady, metav1.ConditionTrue, ReasonResolved, "", now)
	return nil
}
