package snapshot_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// TestInFlightReservedClaimsTakeTheRoom: NodeClaims planned into a
// capacity reservation and not launched yet take its room in the engine's
// input (the cloud's count does not know them); a launched one (it has a
// providerID, so the cloud's count has it) and one being deleted do not.
// At 0 the reserved offering is unavailable. The source's types are not
// modified.
func TestInFlightReservedClaimsTakeTheRoom(t *testing.T) {
	small := fakeType("small", "2", "4Gi")
	small.Offerings = append(small.Offerings, cloudprovider.Offering{Zone: "z1", CapacityType: "reserved", Price: 0.0001, Available: true,
		ReservationID: "cr-1", ReservationType: "default", ReservedCapacity: 2})
	other := fakeType("other", "4", "8Gi")
	other.Offerings = append(other.Offerings, cloudprovider.Offering{Zone: "z1", CapacityType: "reserved", Price: 0.0002, Available: true,
		ReservationID: "cr-2", ReservationType: "default", ReservedCapacity: 3})
	claim := func(name, offering, providerID string, deleting bool, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}}}
		if offering != "" {
			nc.Annotations = map[string]string{karpv1.AnnotationPlannedOffering: offering}
		}
		nc.Spec.Requirements = reqs
		nc.Status.ProviderID = providerID
		if deleting {
			nc.DeletionTimestamp = &metav1.Time{}
			nc.Finalizers = []string{"x"}
		}
		return nc
	}
	build := func(claims ...*karpv1.NodeClaim) map[string]cloudprovider.Offering {
		t.Helper()
		in, err := snapshot.Build(&snapshot.Cluster{NodePools: []*karpv1.NodePool{nodePool("general", "default")},
			NodeClasses: []*awsv1.EC2NodeClass{nodeClass("default")}, NodeClaims: claims}, snapshot.StaticSource{small, other}, snapshot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]cloudprovider.Offering{}
		for _, it := range in.NodePools[0].InstanceTypes {
			for _, o := range it.Offerings {
				if o.CapacityType == "reserved" {
					out[o.ReservationID] = o
				}
			}
		}
		return out
	}
	got := build(claim("a", "small/z1/reserved", "", false))
	if o := got["cr-1"]; o.ReservedCapacity != 1 || !o.Available {
		t.Errorf("one pending claim: cr-1 %+v, want 1 left and available", o)
	}
	got = build(
		claim("a", "small/z1/reserved", "", false),
		claim("b", "small/z1/reserved", "", false),
		claim("launched", "small/z1/reserved", "aws:///z1/i-1", false),
		claim("gone", "small/z1/reserved", "", true),
		claim("od", "small/z1/on-demand", "", false),
		claim("by-id", "", "", false, karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelCapacityReservationID, Operator: "In", Values: []string{"cr-2"}}),
	)
	if o := got["cr-1"]; o.ReservedCapacity != 0 || o.Available {
		t.Errorf("two pending claims: cr-1 %+v, want 0 left and unavailable", o)
	}
	if o := got["cr-2"]; o.ReservedCapacity != 2 || !o.Available {
		t.Errorf("a claim naming cr-2: %+v, want 2 left", o)
	}
	if small.Offerings[1].ReservedCapacity != 2 || !small.Offerings[1].Available {
		t.Errorf("the source's type was modified: %+v", small.Offerings[1])
	}
}
