package aws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// reservedPool allows reserved and on-demand amd64 c instances.
func reservedPool(t *testing.T, types []*cloudprovider.InstanceType) engine.NodePool {
	t.Helper()
	r := func(key string, values ...string) *requirements.Requirement {
		req, err := requirements.New(key, requirements.In, values, nil)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	return engine.NodePool{Name: "default", InstanceTypes: types, Requirements: requirements.NewRequirements(
		r(karpv1.LabelArch, "amd64"), r(karpv1.CapacityTypeLabelKey, "reserved", "on-demand"), r(awsv1.LabelInstanceCategory, "c"),
	)}
}

// reservedClass creates a targeted reservation of n c5.2xlarge in zone
// (through the SDK) and a resolved class that selects it by id.
func reservedClass(t *testing.T, e *env, c *ec2.Client, zone string, n int32) (string, *awsv1.EC2NodeClass) {
	t.Helper()
	out, err := c.CreateCapacityReservation(e.ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("c5.2xlarge"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(n), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted,
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.CapacityReservation.CapacityReservationId)
	spec := discoverySpec()
	spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: id}}
	return id, e.createClass(spec)
}

// onePerNode are n pods of 5 cpu and 8Gi (a c5.2xlarge holds one) that
// may not share a node.
func onePerNode(n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w-" + string(rune('a'+i)), Labels: map[string]string{"app": "w"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("5"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				}}}},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}},
				}}}},
			},
		})
	}
	return pods
}

// The must-show of reserved capacity through aws-sdk-go-v2 against the
// emulator and a real API server: 3 reserved c5.2xlarge in one zone
// (CreateCapacityReservation) selected by an EC2NodeClass's
// capacityReservationSelectorTerms, and 5 one-per-node pods that fit
// them: the engine plans, and the provider launches, 3 NodeClaims into
// the reservation (capacity type reserved, labelled with its id and type
// default, counted by EC2) and 2 on-demand; the next plan sees the
// reservation full. Cancelling the reservation drifts its nodes.
func TestReservedCapacityFillsTheReservationThenFallsBack(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.testCalls = map[string]bool{"ec2:CreateCapacityReservation": true, "ec2:CancelCapacityReservation": true}
	c := ec2.NewFromConfig(e.cfg)
	zone := e.class.Status.Subnets[0].Zone
	id, class := reservedClass(t, e, c, zone, 3)
	if len(class.Status.CapacityReservations) != 1 || !class.IsTrue(awsv1.ConditionTypeCapacityReservationsReady) {
		t.Fatalf("class status %+v", class.Status)
	}
	e.class = class
	solve := func(pods []*corev1.Pod) *engine.Plan {
		t.Helper()
		types, err := e.p.GetInstanceTypes(e.ctx, pool(e, class))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := engine.Solve(&engine.Input{Pods: pods, NodePools: []engine.NodePool{reservedPool(t, types)},
			Region: e.emu.Options().Region, Options: engine.Options{SkipLowerBound: true}})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unschedulable) != 0 {
			t.Fatalf("unschedulable: %v", plan.Unschedulable)
		}
		return plan
	}
	plan := solve(onePerNode(5))
	if len(plan.NodeClaims) != 5 {
		t.Fatalf("%d NodeClaims, want 5", len(plan.NodeClaims))
	}
	var reservedClaims []*karpv1.NodeClaim
	other := 0
	for _, nc := range plan.NodeClaims {
		got, err := e.p.Create(e.ctx, e.claimFromPlan(nc))
		if err != nil {
			t.Fatalf("launching %s (%+v): %v", nc.Name, nc.Offering, err)
		}
		ct := got.Labels[karpv1.CapacityTypeLabelKey]
		if ct != nc.Offering.CapacityType {
			t.Errorf("%s planned %s, launched %s", nc.Name, nc.Offering.CapacityType, ct)
		}
		switch ct {
		case karpv1.CapacityTypeReserved:
			reservedClaims = append(reservedClaims, got)
			if got.Labels[awsv1.LabelCapacityReservationID] != id || got.Labels[awsv1.LabelCapacityReservationType] != "default" ||
				got.Labels[karpv1.LabelInstanceType] != "c5.2xlarge" || got.Labels[karpv1.LabelTopologyZone] != zone {
				t.Errorf("reserved NodeClaim labels %v", got.Labels)
			}
			if in := e.instanceOf(got.Status.ProviderID); in.CapacityReservationID != id {
				t.Errorf("instance %s is not in the reservation (%q)", in.ID, in.CapacityReservationID)
			}
		case karpv1.CapacityTypeOnDemand:
			other++
			if _, ok := got.Labels[awsv1.LabelCapacityReservationID]; ok {
				t.Errorf("on-demand NodeClaim carries a reservation id: %v", got.Labels)
			}
			if in := e.instanceOf(got.Status.ProviderID); in.CapacityReservationID != "" {
				t.Errorf("on-demand instance %s went into reservation %s", in.ID, in.CapacityReservationID)
			}
		default:
			t.Errorf("%s launched as %s", got.Name, ct)
		}
	}
	if len(reservedClaims) != 3 || other != 2 {
		t.Fatalf("%d reserved and %d on-demand NodeClaims, want 3 and 2", len(reservedClaims), other)
	}
	desc, err := c.DescribeCapacityReservations(e.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil || aws.ToInt32(desc.CapacityReservations[0].AvailableInstanceCount) != 0 {
		t.Fatalf("reservation after the launches: %v %+v", err, desc)
	}

	// The next plan sees the reservation full.
	for _, nc := range solve(onePerNode(1)).NodeClaims {
		if nc.Offering.CapacityType == karpv1.CapacityTypeReserved {
			t.Errorf("planned into the full reservation: %+v", nc.Offering)
		}
	}
	// Cancelled: the class no longer lists it and its nodes drift.
	if _, err := c.CancelCapacityReservation(e.ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	class = e.resolve(class)
	if len(class.Status.CapacityReservations) != 0 || class.IsTrue(awsv1.ConditionTypeCapacityReservationsReady) {
		t.Errorf("after the cancel: %v, CapacityReservationsReady %v", class.Status.CapacityReservations, class.GetCondition(awsv1.ConditionTypeCapacityReservationsReady))
	}
	for _, nc := range reservedClaims {
		if r, err := e.p.IsDrifted(e.ctx, nc); err != nil || r != awsprovider.DriftCapacityReservation {
			t.Errorf("%s after the cancel: drift %q, %v", nc.Name, r, err)
		}
	}
}

// A reservation EC2 finds full though the provider last counted room (the
// slot was taken outside dovetail): the launch of the claim planned into
// it fails with ReservationCapacityExceeded, an insufficient-capacity
// error; the (type, zone, reserved) offering is marked unavailable, and
// the next plan launches on the pool's other capacity type.
func TestFullReservationFallsBackThroughTheUnavailableCache(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.testCalls = map[string]bool{"ec2:CreateCapacityReservation": true, "ec2:RunInstances": true}
	c := ec2.NewFromConfig(e.cfg)
	subnet := e.class.Status.Subnets[0]
	id, class := reservedClass(t, e, c, subnet.Zone, 1)
	e.class = class
	solve := func() engine.NewNodeClaim {
		t.Helper()
		types, err := e.p.GetInstanceTypes(e.ctx, pool(e, class))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := engine.Solve(&engine.Input{Pods: onePerNode(1), NodePools: []engine.NodePool{reservedPool(t, types)},
			Region: e.emu.Options().Region, Options: engine.Options{SkipLowerBound: true}})
		if err != nil || len(plan.NodeClaims) != 1 {
			t.Fatalf("plan %+v, %v", plan, err)
		}
		return plan.NodeClaims[0]
	}
	planned := solve()
	if planned.Offering.CapacityType != karpv1.CapacityTypeReserved {
		t.Fatalf("planned %+v, want the reservation", planned.Offering)
	}
	// With the ReservedCapacity gate off, the same class gets no reserved
	// offering.
	offOpts := e.opts
	offOpts.NoReservedCapacity = true
	off, err := awsprovider.New(e.ctx, e.cfg, offOpts)
	if err != nil {
		t.Fatal(err)
	}
	offTypes, err := off.GetInstanceTypes(e.ctx, pool(e, class))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range offTypes {
		for _, o := range it.Offerings {
			if o.CapacityType == karpv1.CapacityTypeReserved {
				t.Fatalf("gate off: %s has a reserved offering %+v", it.Name, o)
			}
		}
	}
	// Someone else takes the slot.
	if _, err := c.RunInstances(e.ctx, &ec2.RunInstancesInput{
		ImageId: aws.String(class.Status.AMIs[0].ID), InstanceType: ec2types.InstanceTypeC52xlarge, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId:        aws.String(subnet.ID),
		MetadataOptions: &ec2types.InstanceMetadataOptionsRequest{HttpTokens: ec2types.HttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1)},
		CapacityReservationSpecification: &ec2types.CapacityReservationSpecification{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)}},
	}); err != nil {
		t.Fatal(err)
	}
	claim := e.claimFromPlan(planned)
	claim.Annotations = map[string]string{karpv1.AnnotationPlannedOffering: "c5.2xlarge/" + subnet.Zone + "/reserved"}
	if _, err := e.p.Create(e.ctx, claim); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("launch into the reservation EC2 finds full = %v, want InsufficientCapacityError", err)
	}
	if !e.p.Unavailable().IsUnavailable(cloudprovider.OfferingKey{InstanceType: "c5.2xlarge", Zone: subnet.Zone, CapacityType: karpv1.CapacityTypeReserved}) {
		t.Error("the full reservation's offering is not marked unavailable")
	}
	next := solve()
	if next.Offering.CapacityType != karpv1.CapacityTypeOnDemand {
		t.Fatalf("re-plan %+v, want on-demand", next.Offering)
	}
	got, err := e.p.Create(e.ctx, e.claimFromPlan(next))
	if err != nil || got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand {
		t.Fatalf("fallback launch: %v, %v", err, got)
	}
}
