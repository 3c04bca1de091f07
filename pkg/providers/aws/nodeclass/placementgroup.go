package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// Reasons of PlacementGroupReady, as the peer's.
const (
	ReasonPlacementGroupNotFound     = "PlacementGroupNotFound"
	ReasonPlacementGroupNotAvailable = "PlacementGroupNotAvailable"
)

// PlacementGroup describes the placement group sel names (by name or
// id); nil, nil when EC2 knows no such group.
func (r *Resolver) PlacementGroup(ctx context.Context, sel awsv1.PlacementGroupSelector) (*ec2types.PlacementGroup, error) {
	in := &ec2.DescribePlacementGroupsInput{}
	if sel.ID != "" {
		in.GroupIds = []string{sel.ID}
	} else {
		in.GroupNames = []string{sel.Name}
	}
	out, err := r.EC2.DescribePlacementGroups(ctx, in)
	if err != nil {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && strings.HasPrefix(apiErr.ErrorCode(), "InvalidPlacementGroup") &&
			(strings.HasSuffix(apiErr.ErrorCode(), ".Unknown") || strings.HasSuffix(apiErr.ErrorCode(), ".NotFound")) {
			return nil, nil
		}
		return nil, fmt.Errorf("describing placement group %s: %w", describePlacementSelector(sel), err)
	}
	for i, g := range out.PlacementGroups {
		if sel.ID != "" && derefString(g.GroupId) == sel.ID || sel.ID == "" && derefString(g.GroupName) == sel.Name {
			return &out.PlacementGroups[i], nil
		}
	}
	return nil, nil
}

// placementGroupStatus sets PlacementGroupReady on out: absent when the
// class selects no group, True when the group exists and is available,
// False (the class then not Ready, as the peer's) when it does not exist
// or is not available.
func (r *Resolver) placementGroupStatus(ctx context.Context, nc, out *awsv1.EC2NodeClass, now time.Time) error {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		out.DeleteCondition(awsv1.ConditionTypePlacementGroupReady, now)
		return nil
	}
	g, err := r.PlacementGroup(ctx, *sel)
	if err != nil {
		return err
	}
	what := describePlacementSelector(*sel)
	switch {
	case g == nil:
		out.SetCondition(awsv1.ConditionTypePlacementGroupReady, metav1.ConditionFalse, ReasonPlacementGroupNotFound,
			"no placement group matches spec.placementGroupSelector "+what, now)
	case g.State != ec2types.PlacementGroupStateAvailable:
		out.SetCondition(awsv1.ConditionTypePlacementGroupReady, metav1.ConditionFalse, ReasonPlacementGroupNotAvailable,
			fmt.Sprintf("placement group %s (%s) is %s, not available", derefString(g.GroupName), derefString(g.GroupId), g.State), now)
	default:
		out.SetCondition(awsv1.ConditionTypePlacementGroupReady, metav1.ConditionTrue, ReasonResolved,
			fmt.Sprintf("%s placement group %s (%s)", g.Strategy, derefString(g.GroupName), derefString(g.GroupId)), now)
	}
	return nil
}

func describePlacementSelector(sel awsv1.PlacementGroupSelector) string {
	if sel.ID != "" {
		return fmt.Sprintf("(id %q)", sel.ID)
	}
	return fmt.Sprintf("(name %q)", sel.Name)
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
