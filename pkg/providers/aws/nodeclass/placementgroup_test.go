package nodeclass_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// TestPlacementGroupReady: a class selecting an existing placement group
// (by name or id, any strategy) gets PlacementGroupReady=True naming it
// and stays Ready; one that matches nothing gets PlacementGroupReady=False,
// reason PlacementGroupNotFound, and is not Ready (as the peer's); a
// class without a selector carries no PlacementGroupReady. A group deleted
// after the class resolved it turns the condition False.
func TestPlacementGroupReady(t *testing.T) {
	e, r := newResolver(t)
	ctx := context.Background()
	ec2c := awstest.Clients(e).EC2
	ids := map[string]string{}
	for _, g := range []struct {
		name     string
		strategy ec2types.PlacementStrategy
	}{{"train", ec2types.PlacementStrategyCluster}, {"kafka", ec2types.PlacementStrategyPartition}, {"etcd", ec2types.PlacementStrategySpread}} {
		in := &ec2.CreatePlacementGroupInput{GroupName: aws.String(g.name), Strategy: g.strategy}
		if g.strategy == ec2types.PlacementStrategyPartition {
			in.PartitionCount = aws.Int32(3)
		}
		out, err := ec2c.CreatePlacementGroup(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if out.PlacementGroup == nil || aws.ToString(out.PlacementGroup.GroupName) != g.name || out.PlacementGroup.Strategy != g.strategy ||
			!strings.HasPrefix(aws.ToString(out.PlacementGroup.GroupId), "pg-") {
			t.Fatalf("CreatePlacementGroup %s: %+v", g.name, out.PlacementGroup)
		}
		ids[g.name] = aws.ToString(out.PlacementGroup.GroupId)
	}
	resolve := func(sel *awsv1.PlacementGroupSelector) *awsv1.EC2NodeClass {
		t.Helper()
		nc := discoveryClass()
		nc.Spec.PlacementGroupSelector = sel
		out, err := r.Resolve(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		sel      awsv1.PlacementGroupSelector
		strategy string
		id       string
	}{
		{awsv1.PlacementGroupSelector{Name: "train"}, "cluster", ids["train"]},
		{awsv1.PlacementGroupSelector{Name: "kafka"}, "partition", ids["kafka"]},
		{awsv1.PlacementGroupSelector{ID: ids["etcd"]}, "spread", ids["etcd"]},
	} {
		out := resolve(&tc.sel)
		c := cond(out, awsv1.ConditionTypePlacementGroupReady)
		if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, tc.strategy) || !strings.Contains(c.Message, tc.id) {
			t.Errorf("%+v: PlacementGroupReady %+v, want True naming %s %s", tc.sel, c, tc.strategy, tc.id)
		}
		if !out.IsTrue(awsv1.ConditionTypeReady) {
			t.Errorf("%+v: not Ready: %+v", tc.sel, cond(out, awsv1.ConditionTypeReady))
		}
	}
	for _, sel := range []awsv1.PlacementGroupSelector{{Name: "missing"}, {ID: "pg-0123456789abcdef0"}} {
		out := resolve(&sel)
		c := cond(out, awsv1.ConditionTypePlacementGroupReady)
		if c.Status != metav1.ConditionFalse || c.Reason != nodeclass.ReasonPlacementGroupNotFound {
			t.Errorf("%+v: PlacementGroupReady %+v, want False/%s", sel, c, nodeclass.ReasonPlacementGroupNotFound)
		}
		if ready := cond(out, awsv1.ConditionTypeReady); ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, awsv1.ConditionTypePlacementGroupReady) {
			t.Errorf("%+v: Ready %+v, want False naming PlacementGroupReady", sel, ready)
		}
	}
	// The selector removed: the condition goes and the class is Ready.
	withPG := resolve(&awsv1.PlacementGroupSelector{Name: "missing"})
	withPG.Spec.PlacementGroupSelector = nil
	out, err := r.Resolve(ctx, withPG)
	if err != nil {
		t.Fatal(err)
	}
	if c := out.GetCondition(awsv1.ConditionTypePlacementGroupReady); c != nil {
		t.Errorf("no selector: PlacementGroupReady %+v", c)
	}
	if !out.IsTrue(awsv1.ConditionTypeReady) {
		t.Errorf("no selector: not Ready: %+v", cond(out, awsv1.ConditionTypeReady))
	}
	// Deleted after resolving.
	if _, err := ec2c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("train")}); err != nil {
		t.Fatal(err)
	}
	if c := cond(resolve(&awsv1.PlacementGroupSelector{Name: "train"}), awsv1.ConditionTypePlacementGroupReady); c.Status != metav1.ConditionFalse {
		t.Errorf("deleted group: PlacementGroupReady %+v", c)
	}
}
