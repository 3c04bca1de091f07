package controllerstest

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider/fake"
)

// Zones of the test cloud.
const (
	ZoneA = "test-zone-a"
	ZoneB = "test-zone-b"
)

// InstanceTypes returns the small catalog the test cloud sells: m5.large
// (2 vCPU, 8Gi), c5.xlarge (4 vCPU, 8Gi) and g4dn.xlarge (4 vCPU, 16Gi, one
// nvidia.com/gpu), each on-demand and spot in ZoneA and ZoneB. Spot costs
// 30% of on-demand; ZoneB is a little dearer than ZoneA.
func InstanceTypes() []*cloudprovider.InstanceType {
	mk := func(name, family, arch string, cpu int64, mem string, gpu int64, od float64) *cloudprovider.InstanceType {
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory:           resource.MustParse(mem),
			corev1.ResourcePods:             resource.MustParse("58"),
			corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
		}
		if gpu > 0 {
			capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpu, resource.DecimalSI)
		}
		var offerings cloudprovider.Offerings
		for i, zone := range []string{ZoneA, ZoneB} {
			bump := 1 + 0.01*float64(i)
			offerings = append(offerings,
				cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: od * bump, Available: true},
				cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: od * 0.3 * bump, Available: true},
			)
		}
		return &cloudprovider.InstanceType{
			Name: name,
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable:      name,
				corev1.LabelArchStable:              arch,
				corev1.LabelOSStable:                "linux",
				"karpenter.k8s.aws/instance-family": family,
			},
			Capacity: capacity,
			Overhead: cloudprovider.Overhead{KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("600Mi"),
			}},
			Offerings: offerings,
		}
	}
	return []*cloudprovider.InstanceType{
		mk("m5.large", "m5", karpv1.ArchitectureAmd64, 2, "8Gi", 0, 0.096),
		mk("c5.xlarge", "c5", karpv1.ArchitectureAmd64, 4, "8Gi", 0, 0.17),
		mk("g4dn.xlarge", "g4dn", karpv1.ArchitectureAmd64, 4, "16Gi", 1, 0.526),
	}
}

// Cloud is the fake cloud with error injection and call counting that are
// safe while controllers call it concurrently. Use its methods rather than
// the embedded fake's Next...Err fields and Calls.
type Cloud struct {
	*fake.CloudProvider

	mu     sync.Mutex
	errs   map[string][]error
	counts map[string]int
}

var _ cloudprovider.CloudProvider = (*Cloud)(nil)

// NewCloud returns a cloud selling the given instance types (InstanceTypes
// when none are given).
func NewCloud(its ...*cloudprovider.InstanceType) *Cloud {
	if len(its) == 0 {
		its = InstanceTypes()
	}
	return &Cloud{CloudProvider: fake.New(its...), errs: map[string][]error{}, counts: map[string]int{}}
}

// FailNext makes the next len(errs) calls of method ("Create", "Delete",
// "Get", "List", "GetInstanceTypes", "IsDrifted") return these errors, in
// order, without reaching the fake.
func (c *Cloud) FailNext(method string, errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs[method] = append(c.errs[method], errs...)
}

// Calls returns how many times method was called (injected failures
// included).
func (c *Cloud) Calls(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[method]
}

func (c *Cloud) enter(method string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[method]++
	if q := c.errs[method]; len(q) > 0 {
		c.errs[method] = q[1:]
		return q[0]
	}
	return nil
}

// Create counts, injects, and forwards.
func (c *Cloud) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	if err := c.enter("Create"); err != nil {
		return nil, err
	}
	return c.CloudProvider.Create(ctx, nc)
}

// Delete counts, injects, and forwards.
func (c *Cloud) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	if err := c.enter("Delete"); err != nil {
		return err
	}
	return c.CloudProvider.Delete(ctx, nc)
}

// Reboot counts, injects, and forwards.
func (c *Cloud) Reboot(ctx context.Context, nc *karpv1.NodeClaim) error {
	if err := c.enter("Reboot"); err != nil {
		return err
	}
	return c.CloudProvider.Reboot(ctx, nc)
}

// Get counts, injects, and forwards.
func (c *Cloud) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	if err := c.enter("Get"); err != nil {
		return nil, err
	}
	return c.CloudProvider.Get(ctx, providerID)
}

// List counts, injects, and forwards.
func (c *Cloud) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	if err := c.enter("List"); err != nil {
		return nil, err
	}
	return c.CloudProvider.List(ctx)
}

// GetInstanceTypes counts, injects, and forwards.
func (c *Cloud) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if err := c.enter("GetInstanceTypes"); err != nil {
		return nil, err
	}
	return c.CloudProvider.GetInstanceTypes(ctx, np)
}

// IsDrifted counts, injects, and forwards.
func (c *Cloud) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	if err := c.enter("IsDrifted"); err != nil {
		return "", err
	}
	return c.CloudProvider.IsDrifted(ctx, nc)
}
