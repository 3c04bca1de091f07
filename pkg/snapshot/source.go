package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// InstanceTypeSource gives the instance types a NodePool may launch with its
// node class: their labels, capacity, overhead (already computed for the
// class's kubelet settings) and offerings.
//
// InstanceTypes must not modify its arguments. The returned types are read
// only; a source may return the same slice for several pools. An error means
// the source cannot answer for this pool (for example, the node class holds a
// value the allocatable model refuses); Build reports it naming the NodePool.
type InstanceTypeSource interface {
	InstanceTypes(nodePool *karpv1.NodePool, nodeClass *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error)
}

// CatalogSource serves instance types from a catalog.Catalog for one region
// and a set of zones, computing allocatable from each EC2NodeClass's kubelet
// settings, AMI family and ephemeral volume. Results are cached per distinct
// setting, so pools that share a class share one slice. It is safe for
// concurrent use.
type CatalogSource struct {
	catalog *catalog.Catalog
	region  string
	zones   []string

	mu    sync.Mutex
	cache map[string][]*cloudprovider.InstanceType
}

var _ InstanceTypeSource = (*CatalogSource)(nil)

// NewCatalogSource returns a source over c for region. zones are zone names
// or ids; nil means every zone of the region (see catalog.InstanceTypes).
func NewCatalogSource(c *catalog.Catalog, region string, zones []string) *CatalogSource {
	return &CatalogSource{catalog: c, region: region, zones: append([]string(nil), zones...), cache: map[string][]*cloudprovider.InstanceType{}}
}

// InstanceTypes implements InstanceTypeSource. The error wraps the node
// class's invalid kubelet settings as a field.ErrorList aggregate.
func (s *CatalogSource) InstanceTypes(_ *karpv1.NodePool, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	settings, errs := KubeletSettings(nc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, errs.ToAggregate())
	}
	key, err := json.Marshal(settings)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %q: encoding kubelet settings: %w", nc.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if types, ok := s.cache[string(key)]; ok {
		return types, nil
	}
	types := s.catalog.InstanceTypes(s.region, s.zones, settings)
	s.cache[string(key)] = types
	return types, nil
}

// StaticSource serves the same instance types to every NodePool, whatever
// its node class (for a catalog file that already states allocatable).
type StaticSource []*cloudprovider.InstanceType

var _ InstanceTypeSource = StaticSource(nil)

// InstanceTypes implements InstanceTypeSource; it never fails.
func (s StaticSource) InstanceTypes(*karpv1.NodePool, *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	return s, nil
}

// Default device names of the volume that holds ephemeral storage, by AMI
// family, when no block device mapping is marked rootVolume.
var ephemeralDevice = map[string]string{
	awsv1.AMIFamilyAL2:          "/dev/xvda",
	awsv1.AMIFamilyAL2023:       "/dev/xvda",
	awsv1.AMIFamilyBottlerocket: "/dev/xvdb",
}

// IsWindows reports whether an AMI family is one of the Windows families.
func IsWindows(family string) bool { return strings.HasPrefix(family, "Windows") }

// KubeletSettings converts what an EC2NodeClass says about allocatable into
// catalog.KubeletSettings: the spec.kubelet fields (maxPods, podsPerCore,
// kubeReserved, systemReserved, evictionHard, evictionSoft), the AMI family
// (from the alias or spec.amiFamily; Windows families, which the catalog
// does not model, are treated as AL2023 here and reported by NodePool as
// unsupported), the size of the ephemeral-storage volume (the block device
// mapping marked rootVolume, else the family's default device: /dev/xvda for
// AL2 and AL2023, Bottlerocket's data volume /dev/xvdb; Custom uses only a
// rootVolume mapping) and spec.instanceStorePolicy. A nil class gives the
// defaults. The errors are those of catalog.KubeletSettings.Validate, with
// EC2NodeClass field paths.
func KubeletSettings(nc *awsv1.EC2NodeClass) (catalog.KubeletSettings, field.ErrorList) {
	var s catalog.KubeletSettings
	if nc == nil {
		return s, nil
	}
	family := nc.AMIFamily()
	if !IsWindows(family) {
		s.AMIFamily = family
	}
	if k := nc.Spec.Kubelet; k != nil {
		s.MaxPods = k.MaxPods
		s.PodsPerCore = k.PodsPerCore
		s.KubeReserved = k.KubeReserved
		s.SystemReserved = k.SystemReserved
		s.EvictionHard = k.EvictionHard
		s.EvictionSoft = k.EvictionSoft
	}
	if nc.Spec.InstanceStorePolicy != nil {
		s.InstanceStorePolicy = string(*nc.Spec.InstanceStorePolicy)
	}
	s.EphemeralVolumeSize = ephemeralVolumeSize(nc.Spec.BlockDeviceMappings, s.AMIFamily)
	return s, s.Validate()
}

func ephemeralVolumeSize(bdms []*awsv1.BlockDeviceMapping, family string) *resource.Quantity {
	size := func(m *awsv1.BlockDeviceMapping) *resource.Quantity {
		if m == nil || m.EBS == nil || m.EBS.VolumeSize == nil {
			return nil
		}
		q := m.EBS.VolumeSize.DeepCopy()
		return &q
	}
	for _, m := range bdms {
		if m != nil && m.RootVolume {
			return size(m)
		}
	}
	if family == "" {
		family = awsv1.AMIFamilyAL2023
	}
	dev, ok := ephemeralDevice[family]
	if !ok {
		return nil
	}
	for _, m := range bdms {
		if m != nil && m.DeviceName != nil && *m.DeviceName == dev {
			return size(m)
		}
	}
	return nil
}
