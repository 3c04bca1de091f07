package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// TestReservedCapacityOnTheStack: on the whole local stack (controller
// process, emulator reached through aws-sdk-go-v2, real API server), a
// reservation of 3 c5.2xlarge in one zone, selected by an EC2NodeClass
// by id, and 5 one-per-node pods that fit them: the pods run on 3 nodes in
// the reservation (NodeClaims and nodes labelled reserved with its id and
// type, instances counted by EC2) and 2 on-demand nodes.
func TestReservedCapacityOnTheStack(t *testing.T) {
	ctx := t.Context()
	c := ec2.NewFromConfig(emu().AWSConfig())
	def := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, def); err != nil {
		t.Fatal(err)
	}
	zone := def.Status.Subnets[0].Zone
	out, err := c.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: awssdk.String("c5.2xlarge"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: awssdk.String(zone), InstanceCount: awssdk.Int32(3), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted,
	})
	if err != nil {
		t.Fatal(err)
	}
	id := awssdk.ToString(out.CapacityReservation.CapacityReservationId)
	t.Cleanup(func() {
		_, _ = c.CancelCapacityReservation(context.Background(), &ec2.CancelCapacityReservationInput{CapacityReservationId: awssdk.String(id)})
	})
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "reserved-e2e"}, Spec: *def.Spec.DeepCopy()}
	class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: id}}
	if err := kube.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the scenario's (pods, pool, nodes) before
	// the class's, before the reservation's.
	t.Cleanup(func() { _ = kube.Delete(context.Background(), class) })
	s := newScenario(t)
	eventually(t, time.Minute, "the class resolves the reservation", func() (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(class), class)
		return len(class.Status.CapacityReservations) == 1 && class.IsTrue(awsv1.ConditionTypeReady), err
	})
	s.pool("reserved", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.NodeClassRef.Name = class.Name
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"reserved", "on-demand"}},
			{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c"}},
		}
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	s.deployment("w", 5, "5", "8Gi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"e2e": "reserved"}
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}},
			}}}}
	})
	s.waitRunning(5, 3*time.Minute)
	reserved, onDemand := 0, 0
	for _, nc := range nodeClaims(t) {
		if nc.Labels[karpv1.NodePoolLabelKey] != "reserved" {
			continue
		}
		switch ct := nc.Labels[karpv1.CapacityTypeLabelKey]; ct {
		case karpv1.CapacityTypeReserved:
			reserved++
			if nc.Labels[awsv1.LabelCapacityReservationID] != id || nc.Labels[awsv1.LabelCapacityReservationType] != "default" {
				t.Errorf("reserved NodeClaim %s labels %v", nc.Name, nc.Labels)
			}
			if n := nodeOf(t, &nc); n != nil && n.Labels[awsv1.LabelCapacityReservationID] != id {
				t.Errorf("node %s of reserved NodeClaim %s lacks the reservation id: %v", n.Name, nc.Name, n.Labels)
			}
		case karpv1.CapacityTypeOnDemand:
			onDemand++
		default:
			t.Errorf("NodeClaim %s is %s", nc.Name, ct)
		}
	}
	inReservation := 0
	for _, in := range liveInstances() {
		if in.CapacityReservationID == id {
			inReservation++
		}
	}
	if reserved != 3 || onDemand != 2 || inReservation != 3 {
		t.Fatalf("%d reserved and %d on-demand NodeClaims, %d instances in the reservation; want 3, 2, 3", reserved, onDemand, inReservation)
	}
	if err := consistent(t); err != nil {
		t.Error(err)
	}

	// Cancelled: EC2 keeps the instances (now on-demand); at the class's
	// next refresh (forced here by an annotation instead of waiting up to
	// a minute) it no longer lists the reservation, its nodes drift and are
	// replaced, and the pods run again on nodes outside it.
	if _, err := c.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: awssdk.String(id)}); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(class.DeepCopy())
	class.Annotations = map[string]string{"e2e/refresh": "1"}
	if err := kube.Patch(ctx, class, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the reserved nodes replaced", func() (bool, error) {
		left := 0
		for _, nc := range nodeClaims(t) {
			if nc.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeReserved {
				left++
			}
		}
		running, _, err := s.running()
		if left > 0 || running != 5 {
			return false, fmt.Errorf("%d reserved NodeClaims left, %d pods running", left, running)
		}
		return true, err
	})
}
