package fake_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider/fake"
)

func instanceType(name, arch string, cpu int64, offerings ...cloudprovider.Offering) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: arch},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("29"),
		},
		Overhead:  cloudprovider.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Offerings: offerings,
	}
}

func offer(zone, ct string, price float64) cloudprovider.Offering {
	return cloudprovider.Offering{Zone: zone, CapacityType: ct, Price: price, Available: true}
}

func nodeClaim(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       karpv1.NodeClaimSpec{Requirements: reqs},
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func TestCreatePicksCheapestAllowedOfferingAndFallsBack(t *testing.T) {
	ctx := context.Background()
	cp := fake.New(
		instanceType("small", "arm64", 2, offer("z1", "spot", 0.02), offer("z2", "spot", 0.03), offer("z1", "on-demand", 0.08)),
		instanceType("large", "amd64", 4, offer("z1", "spot", 0.01), offer("z1", "on-demand", 0.16)),
	)
	arm := req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")

	got, err := cp.Create(ctx, nodeClaim("a", arm))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != "small" || got.Labels[corev1.LabelTopologyZone] != "z1" || got.Labels[karpv1.CapacityTypeLabelKey] != "spot" {
		t.Fatalf("launched %v, want small/z1/spot (the cheapest arm64 offering)", got.Labels)
	}
	if cpu := got.Status.Allocatable.Cpu().MilliValue(); cpu != 1900 {
		t.Fatalf("allocatable cpu = %dm, want 2000m-100m", cpu)
	}

	cp.SetInsufficientCapacity(cloudprovider.OfferingKey{InstanceType: "small", Zone: "z1", CapacityType: "spot"}, true)
	got, err = cp.Create(ctx, nodeClaim("b", arm))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelTopologyZone] != "z2" {
		t.Fatalf("after ICE on small/z1/spot launched in %s, want z2", got.Labels[corev1.LabelTopologyZone])
	}

	spotOnly := req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")
	cp.SetInsufficientCapacity(cloudprovider.OfferingKey{InstanceType: "small", Zone: "z2", CapacityType: "spot"}, true)
	_, err = cp.Create(ctx, nodeClaim("c", arm, spotOnly))
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 2 {
		t.Fatalf("Create with every allowed offering refused: err = %v, want InsufficientCapacityError naming 2 offerings", err)
	}

	its, err := cp.GetInstanceTypes(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if its[0].Offerings[0].Available || !its[0].Offerings[2].Available {
		t.Fatalf("GetInstanceTypes does not mark refused offerings unavailable: %+v", its[0].Offerings)
	}
}

func TestDeleteGetListAndInjectedErrors(t *testing.T) {
	ctx := context.Background()
	cp := fake.New(instanceType("small", "arm64", 2, offer("z1", "on-demand", 0.08)))
	a, err := cp.Create(ctx, nodeClaim("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Get(ctx, a.Status.ProviderID); err != nil {
		t.Fatalf("Get launched instance: %v", err)
	}
	list, _ := cp.List(ctx)
	if len(list) != 1 || list[0].Name != "a" {
		t.Fatalf("List = %v, want the one instance", list)
	}
	if err := cp.Delete(ctx, a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := cp.Delete(ctx, a); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Fatalf("second Delete = %v, want NodeClaimNotFound", err)
	}
	if _, err := cp.Get(ctx, a.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Fatalf("Get after delete = %v, want NodeClaimNotFound", err)
	}
	boom := errors.New("boom")
	cp.NextCreateErr = boom
	if _, err := cp.Create(ctx, nodeClaim("b")); !errors.Is(err, boom) {
		t.Fatalf("injected error not returned: %v", err)
	}
	if _, err := cp.Create(ctx, nodeClaim("b")); err != nil {
		t.Fatalf("injected error returned twice: %v", err)
	}
	want := []string{"Create a", "Get " + a.Status.ProviderID, "List", "Delete " + a.Status.ProviderID}
	for i, w := range want {
		if cp.Calls[i] != w {
			t.Fatalf("Calls[%d] = %q, want %q (all: %v)", i, cp.Calls[i], w, cp.Calls)
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	err := errWrap(cloudprovider.NewInsufficientCapacityError(nil, cloudprovider.OfferingKey{InstanceType: "b", Zone: "z", CapacityType: "spot"}, cloudprovider.OfferingKey{InstanceType: "a", Zone: "z", CapacityType: "spot"}))
	if !cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsNodeClaimNotFound(err) {
		t.Fatalf("helpers misclassify %v", err)
	}
	if got := err.Error(); got != "launch: insufficient capacity for a/z/spot, b/z/spot" {
		t.Fatalf("message %q: offerings must be sorted", got)
	}
	if cloudprovider.IgnoreNodeClaimNotFound(errWrap(&cloudprovider.NodeClaimNotFoundError{})) != nil {
		t.Fatal("IgnoreNodeClaimNotFound kept a wrapped not-found error")
	}
	if !cloudprovider.IsNodeClassNotReady(errWrap(&cloudprovider.NodeClassNotReadyError{NodeClass: "x"})) {
		t.Fatal("IsNodeClassNotReady missed a wrapped error")
	}
}

func errWrap(err error) error { return &wrapped{err} }

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "launch: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
