package fake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
	"github.com/dovetail-sh/dovetail/pkg/requirements/apireq"
)

// Zone-id label put on launched NodeClaims, as AWS does.
const zoneIDLabel = "topology.k8s.aws/zone-id"

// CloudProvider is an in-memory cloud. Instances are NodeClaim views kept in
// a map; Create picks the cheapest available offering the NodeClaim allows,
// exactly as the contract says. Calls are recorded and errors can be
// injected. The zero value is not usable; call New.
type CloudProvider struct {
	mu sync.Mutex

	instanceTypes []*cloudprovider.InstanceType
	instances     map[string]*karpv1.NodeClaim // by providerID
	next          int

	// Insufficient lists offerings that answer "no capacity".
	insufficient map[cloudprovider.OfferingKey]bool
	// listed is what GetInstanceTypes returns until insufficient changes:
	// one list for every NodePool, as the AWS provider's cache gives.
	listed []*cloudprovider.InstanceType
	// Drifted maps providerIDs to the drift reason IsDrifted reports.
	drifted map[string]cloudprovider.DriftReason
	// repairPolicies are what RepairPolicies returns.
	repairPolicies []cloudprovider.RepairPolicy
	// reboots counts Reboot calls by provider id.
	reboots map[string]int

	// NextCreateErr, NextDeleteErr, NextGetErr, NextListErr are returned
	// (once) by the next call of that method, then cleared.
	NextCreateErr error
	NextDeleteErr error
	NextGetErr    error
	NextListErr   error

	// Calls records every call, in order, as "Create <nodeclaim>",
	// "Delete <providerID>", "Get <providerID>", "List",
	// "GetInstanceTypes <nodepool>", "IsDrifted <providerID>".
	Calls []string
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a cloud selling the given instance types.
func New(instanceTypes ...*cloudprovider.InstanceType) *CloudProvider {
	return &CloudProvider{
		instanceTypes:  instanceTypes,
		instances:      map[string]*karpv1.NodeClaim{},
		insufficient:   map[cloudprovider.OfferingKey]bool{},
		drifted:        map[string]cloudprovider.DriftReason{},
		repairPolicies: DefaultRepairPolicies(),
	}
}

// SetInsufficientCapacity makes Create refuse the offering (true) or sell it
// again (false).
func (c *CloudProvider) SetInsufficientCapacity(k cloudprovider.OfferingKey, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if refused {
		c.insufficient[k] = true
	} else {
		delete(c.insufficient, k)
	}
	c.listed = nil
}

// SetDrifted makes IsDrifted report reason for the instance.
func (c *CloudProvider) SetDrifted(providerID string, reason cloudprovider.DriftReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drifted[providerID] = reason
}

// Instances returns the live instances sorted by providerID.
func (c *CloudProvider) Instances() []*karpv1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sortedLocked()
}

func (c *CloudProvider) sortedLocked() []*karpv1.NodeClaim {
	out := make([]*karpv1.NodeClaim, 0, len(c.instances))
	for _, nc := range c.instances {
		out = append(out, nc.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Status.ProviderID < out[j].Status.ProviderID })
	return out
}

func (c *CloudProvider) record(format string, args ...any) {
	c.Calls = append(c.Calls, fmt.Sprintf(format, args...))
}

func takeErr(p *error) error {
	err := *p
	*p = nil
	return err
}

// Create launches the cheapest available offering the NodeClaim allows.
func (c *CloudProvider) Create(_ context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record("Create %s", nodeClaim.Name)
	if err := takeErr(&c.NextCreateErr); err != nil {
		return nil, err
	}
	reqs, err := apireq.NodeClaim(nodeClaim)
	if err != nil {
		return nil, &cloudprovider.CreateError{Reason: "InvalidRequirements", Err: err}
	}
	type candidate struct {
		it *cloudprovider.InstanceType
		o  cloudprovider.Offering
	}
	var best *candidate
	var refused []cloudprovider.OfferingKey
	for _, it := range c.instanceTypes {
		if !matchesIgnoringOfferingKeys(reqs, it.Labels) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !offeringAllowed(reqs, o) {
				continue
			}
			k := cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if c.insufficient[k] {
				refused = append(refused, k)
				continue
			}
			cand := &candidate{it: it, o: o}
			if best == nil || cheaper(cand.o, cand.it.Name, best.o, best.it.Name) {
				best = cand
			}
		}
	}
	if best == nil {
		if len(refused) > 0 {
			return nil, cloudprovider.NewInsufficientCapacityError(nil, refused...)
		}
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no offering matches the requirements of %s", nodeClaim.Name))
	}
	c.next++
	id := fmt.Sprintf("i-%017x", c.next)
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range best.it.Labels {
		out.Labels[k] = v
	}
	out.Labels[corev1.LabelTopologyZone] = best.o.Zone
	if best.o.ZoneID != "" {
		out.Labels[zoneIDLabel] = best.o.ZoneID
	}
	out.Labels[karpv1.CapacityTypeLabelKey] = best.o.CapacityType
	out.Status.ProviderID = fmt.Sprintf("fake:///%s/%s", best.o.Zone, id)
	out.Status.ImageID = "fake-image"
	out.Status.Capacity = best.it.Capacity.DeepCopy()
	out.Status.Allocatable = best.it.Allocatable()
	c.instances[out.Status.ProviderID] = out.DeepCopy()
	return out, nil
}

// cheaper orders offerings by price, then type name, then zone.
func cheaper(a cloudprovider.Offering, an string, b cloudprovider.Offering, bn string) bool {
	if a.Price != b.Price {
		return a.Price < b.Price
	}
	if an != bn {
		return an < bn
	}
	return a.Zone < b.Zone
}

// matchesIgnoringOfferingKeys checks the type's labels against every
// requirement except the per-offering keys (zone, zone id, capacity type),
// which offeringAllowed judges.
func matchesIgnoringOfferingKeys(reqs requirements.Requirements, labels map[string]string) bool {
	for _, key := range reqs.Keys() {
		switch key {
		case corev1.LabelTopologyZone, zoneIDLabel, karpv1.CapacityTypeLabelKey, karpv1.NodePoolLabelKey:
			continue
		}
		r := reqs.Get(key)
		v, ok := labels[key]
		if !ok {
			// A key no instance type answers for (a NodePool template
			// label) is the node's to carry, not the type's.
			if !r.AllowsAbsent() && typeLevelKey(key) {
				return false
			}
			continue
		}
		if !r.Has(v) {
			return false
		}
	}
	return true
}

// typeLevelKey reports whether instance types answer for the key: the
// well-known labels and the provider's (karpenter.k8s.aws/...) ones, but
// not karpenter.k8s.aws/ec2nodeclass, which names the node's class.
func typeLevelKey(key string) bool {
	if key == "karpenter.k8s.aws/ec2nodeclass" {
		return false
	}
	return slices.Contains(karpv1.WellKnownLabels, key) || strings.HasPrefix(key, "karpenter.k8s.aws/")
}

func offeringAllowed(reqs requirements.Requirements, o cloudprovider.Offering) bool {
	if r := reqs.Get(corev1.LabelTopologyZone); r != nil && !r.Has(o.Zone) {
		return false
	}
	if r := reqs.Get(zoneIDLabel); r != nil && o.ZoneID != "" && !r.Has(o.ZoneID) {
		return false
	}
	if r := reqs.Get(karpv1.CapacityTypeLabelKey); r != nil && !r.Has(o.CapacityType) {
		return false
	}
	return true
}

// Delete terminates the instance; NodeClaimNotFoundError once it is gone.
func (c *CloudProvider) Delete(_ context.Context, nodeClaim *karpv1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := nodeClaim.Status.ProviderID
	c.record("Delete %s", id)
	if err := takeErr(&c.NextDeleteErr); err != nil {
		return err
	}
	if id == "" {
		for pid, inst := range c.instances {
			if inst.Name == nodeClaim.Name {
				id = pid
			}
		}
	}
	if _, ok := c.instances[id]; !ok {
		return &cloudprovider.NodeClaimNotFoundError{ProviderID: id}
	}
	delete(c.instances, id)
	return nil
}

// Reboot records a reboot of the NodeClaim's instance (Reboots counts
// them); NodeClaimNotFoundError when it is not running.
func (c *CloudProvider) Reboot(_ context.Context, nodeClaim *karpv1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := nodeClaim.Status.ProviderID
	c.record("Reboot %s", id)
	if _, ok := c.instances[id]; !ok {
		return &cloudprovider.NodeClaimNotFoundError{ProviderID: id}
	}
	if c.reboots == nil {
		c.reboots = map[string]int{}
	}
	c.reboots[id]++
	return nil
}

// Reboots returns how many times the instance was rebooted.
func (c *CloudProvider) Reboots(providerID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reboots[providerID]
}

// Get returns the instance with the providerID, named after the NodeClaim
// that launched it.
func (c *CloudProvider) Get(_ context.Context, providerID string) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record("Get %s", providerID)
	if err := takeErr(&c.NextGetErr); err != nil {
		return nil, err
	}
	inst, ok := c.instances[providerID]
	if !ok {
		return nil, &cloudprovider.NodeClaimNotFoundError{ProviderID: providerID}
	}
	return inst.DeepCopy(), nil
}

// List returns every live instance, sorted by providerID.
func (c *CloudProvider) List(context.Context) ([]*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record("List")
	if err := takeErr(&c.NextListErr); err != nil {
		return nil, err
	}
	return c.sortedLocked(), nil
}

// GetInstanceTypes returns every instance type, with offerings refused by
// SetInsufficientCapacity marked unavailable: the same list for every
// NodePool until that changes (callers must not modify it).
func (c *CloudProvider) GetInstanceTypes(_ context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record("GetInstanceTypes %s", nodePool.Name)
	if c.listed != nil {
		return c.listed, nil
	}
	out := make([]*cloudprovider.InstanceType, 0, len(c.instanceTypes))
	for _, it := range c.instanceTypes {
		cp := *it
		cp.Offerings = append(cloudprovider.Offerings(nil), it.Offerings...)
		for i, o := range cp.Offerings {
			if c.insufficient[cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] {
				cp.Offerings[i].Available = false
			}
		}
		out = append(out, &cp)
	}
	c.listed = out
	return out, nil
}

// IsDrifted reports the reason set by SetDrifted.
func (c *CloudProvider) IsDrifted(_ context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record("IsDrifted %s", nodeClaim.Status.ProviderID)
	return c.drifted[nodeClaim.Status.ProviderID], nil
}

// DefaultRepairPolicies are the fake's repair policies until
// SetRepairPolicies: the kubelet's Ready condition False or Unknown for 30
// minutes, drained for at most 10.
func DefaultRepairPolicies() []cloudprovider.RepairPolicy {
	grace := 10 * time.Minute
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute, TerminationGracePeriod: &grace},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute, TerminationGracePeriod: &grace},
	}
}

// SetRepairPolicies replaces what RepairPolicies returns.
func (c *CloudProvider) SetRepairPolicies(ps []cloudprovider.RepairPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.repairPolicies = slices.Clone(ps)
}

// RepairPolicies returns the policies set (DefaultRepairPolicies at first).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.repairPolicies)
}

// Name is "fake".
func (c *CloudProvider) Name() string { return "fake" }
