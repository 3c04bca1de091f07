package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// liveStates are the instance states List reports.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// Get returns the NodeClaim view of the instance with the providerID.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	id, err := ParseProviderID(providerID)
	if err != nil {
		// No instance has such an id: the NodeClaim's status is garbage,
		// and garbage collection deletes it (its Delete finds any instance
		// by the NodeClaim's tag) instead of failing on it forever.
		return nil, &cloudprovider.NodeClaimNotFoundError{ProviderID: providerID, Err: err}
	}
	in, err := p.instances.Get(ctx, id)
	if err != nil {
		if instance.IsNotFound(err) {
			return nil, &cloudprovider.NodeClaimNotFoundError{ProviderID: providerID, Err: err}
		}
		return nil, err
	}
	if !slices.Contains(liveStates, in.State) || !p.owned(in) {
		return nil, &cloudprovider.NodeClaimNotFoundError{ProviderID: providerID, Err: fmt.Errorf("instance %s is %s", id, in.State)}
	}
	return p.claimFor(in), nil
}

func (p *Provider) owned(in *instance.Instance) bool {
	return in.Tags[TagClusterPrefix+p.o.ClusterName] == "owned"
}

// List returns every live instance the cluster owns.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	start := p.o.Clock.Now()
	found, err := p.instances.List(ctx, []ec2types.Filter{
		{Name: sdkaws.String("tag:" + TagClusterPrefix + p.o.ClusterName), Values: []string{"owned"}},
		{Name: sdkaws.String("tag-key"), Values: []string{karpv1.NodePoolTagKey}},
		{Name: sdkaws.String("instance-state-name"), Values: liveStates},
	})
	if err != nil {
		return nil, err
	}
	p.instances.Retain(found, start)
	out := make([]*karpv1.NodeClaim, 0, len(found))
	for _, id := range slices.Sorted(maps.Keys(found)) {
		out = append(out, p.claimFor(found[id]))
	}
	return out, nil
}

// claimFor is the NodeClaim view of an instance: its name (from the
// nodeclaim tag), labels of its type, zone and capacity type, and the
// providerID and image in status.
func (p *Provider) claimFor(in *instance.Instance) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              in.Tags[karpv1.NodeClaimTagKey],
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(in.LaunchTime),
		},
	}
	if t, ok := p.types.Get(in.Type); ok {
		maps.Copy(nc.Labels, t.Labels())
	}
	nc.Labels[karpv1.LabelInstanceType] = in.Type
	nc.Labels[karpv1.LabelTopologyZone] = in.Zone
	nc.Labels[karpv1.LabelTopologyRegion] = p.region
	nc.Labels[karpv1.CapacityTypeLabelKey] = in.CapacityType
	if pool := in.Tags[karpv1.NodePoolTagKey]; pool != "" {
		nc.Labels[karpv1.NodePoolLabelKey] = pool
	}
	if class := in.Tags[awsv1.TagNodeClass]; class != "" {
		nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}
	}
	nc.Status.ProviderID = ProviderID(in.Zone, in.ID)
	nc.Status.ImageID = in.ImageID
	return nc
}

// Delete terminates the NodeClaim's instance.
func (p *Provider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	var in *instance.Instance
	pid := nodeClaim.Status.ProviderID
	id := ""
	if pid != "" {
		// An unparseable providerID (a garbage status) names no instance:
		// look the instance up by the NodeClaim's tag, as before launch,
		// so that whatever it launched is still terminated.
		id, _ = ParseProviderID(pid)
	}
	if id != "" {
		var err error
		in, err = p.instances.Get(ctx, id)
		if err != nil {
			if instance.IsNotFound(err) {
				return &cloudprovider.NodeClaimNotFoundError{ProviderID: pid, Err: err}
			}
			return err
		}
	} else {
		found, err := p.instances.List(ctx, []ec2types.Filter{
			{Name: sdkaws.String("tag:" + TagClusterPrefix + p.o.ClusterName), Values: []string{"owned"}},
			{Name: sdkaws.String("tag:" + karpv1.NodeClaimTagKey), Values: []string{nodeClaim.Name}},
		})
		if err != nil {
			return err
		}
		// Prefer a live instance; otherwise any (terminated) one.
		ids := slices.Sorted(maps.Keys(found))
		for _, id := range ids {
			if in == nil || found[id].State != "terminated" {
				in = found[id]
			}
		}
		if in == nil {
			return &cloudprovider.NodeClaimNotFoundError{Err: fmt.Errorf("no instance is tagged for NodeClaim %s", nodeClaim.Name)}
		}
	}
	if tag, ok := in.Tags[karpv1.NodeClaimTagKey]; ok && tag != nodeClaim.Name && nodeClaim.Name != "" {
		// The providerID names another NodeClaim's instance (a status
		// copied or written by hand): that instance is not this claim's to
		// terminate.
		return &cloudprovider.NodeClaimNotFoundError{ProviderID: pid, Err: fmt.Errorf("instance %s belongs to NodeClaim %s, not %s", in.ID, tag, nodeClaim.Name)}
	}
	if !p.owned(in) {
		// Never terminate what the cluster does not own.
		return &cloudprovider.NodeClaimNotFoundError{ProviderID: ProviderID(in.Zone, in.ID), Err: fmt.Errorf("instance %s is not tagged %s%s=owned", in.ID, TagClusterPrefix, p.o.ClusterName)}
	}
	switch in.State {
	case "terminated":
		return &cloudprovider.NodeClaimNotFoundError{ProviderID: ProviderID(in.Zone, in.ID), Err: fmt.Errorf("instance %s is terminated", in.ID)}
	case "shutting-down":
		return nil
	}
	if err := p.instances.Terminate(ctx, in.ID); err != nil {
		if instance.IsNotFound(err) {
			return &cloudprovider.NodeClaimNotFoundError{ProviderID: ProviderID(in.Zone, in.ID), Err: err}
		}
		return err
	}
	return nil
}

// DriftMaxAge is how old the description of an instance IsDrifted compares
// may be. An instance's image and subnet never change, its security groups
// only by a call outside dovetail; so drift reads the instance as launched
// (or as last described), and the records of a whole fleet are described
// again together, in one call per DriftMaxAge/2 or so, not one call per
// check (see instance.Provider.Recent).
const DriftMaxAge = 5 * time.Minute

// IsDrifted reports why the NodeClaim's instance no longer matches its
// node class: its image, subnet or security groups are no longer what the
// class resolves to, or the class's static fields changed (hash). The
// instance is read as described at most DriftMaxAge ago.
func (p *Provider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return "", err
	}
	if nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == nodeclass.HashVersion {
		if h, ok := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]; ok && h != nodeclass.Hash(nc) {
			return cloudprovider.DriftNodeClass, nil
		}
	}
	if nodeClaim.Status.ProviderID == "" {
		return "", nil
	}
	id, err := ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", err
	}
	in, err := p.instances.Recent(ctx, id, DriftMaxAge)
	if err != nil {
		if instance.IsNotFound(err) {
			return "", &cloudprovider.NodeClaimNotFoundError{ProviderID: nodeClaim.Status.ProviderID, Err: err}
		}
		return "", err
	}
	return DriftOf(nc, in), nil
}

// DriftCapacityReservation: the instance runs in a capacity reservation
// its class no longer resolves (cancelled, expired, or no longer
// selected); it now runs, and is paid for, as on-demand, so it is replaced
// like any drifted node and the plan decides what replaces it.
const DriftCapacityReservation cloudprovider.DriftReason = "CapacityReservationDrift"

// DriftOf compares an instance with its class's resolved status.
func DriftOf(nc *awsv1.EC2NodeClass, in *instance.Instance) cloudprovider.DriftReason {
	if in.CapacityReservationID != "" && !slices.ContainsFunc(nc.Status.CapacityReservations, func(cr awsv1.CapacityReservation) bool { return cr.ID == in.CapacityReservationID }) {
		return DriftCapacityReservation
	}
	if len(nc.Status.AMIs) > 0 && !slices.ContainsFunc(nc.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == in.ImageID }) {
		return cloudprovider.DriftImage
	}
	if len(nc.Status.Subnets) > 0 && !slices.ContainsFunc(nc.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == in.SubnetID }) {
		return cloudprovider.DriftSubnet
	}
	if len(nc.Status.SecurityGroups) > 0 {
		var want []string
		for _, g := range nc.Status.SecurityGroups {
			want = append(want, g.ID)
		}
		sort.Strings(want)
		got := slices.Clone(in.SecurityGroupIDs)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			return cloudprovider.DriftSecurityGroup
		}
	}
	return ""
}
