package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/userdata"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
	"github.com/dovetail-sh/dovetail/pkg/requirements/apireq"
)

// Tag keys put on what dovetail launches.
const (
	TagClusterPrefix = nodeclass.TagClusterPrefix
	// TagLaunch is put on every instance at launch: a digest of the
	// launch's capacity type, context and launch templates (launchKey),
	// by which a NodeClaim finds an instance launched for it whose
	// tagging with its name never happened (adoptUntagged).
	TagLaunch = "dovetail.sh/launch"
)

// launchKey digests what of a launch request decides what an instance
// boots as: capacity type, context and launch template names (content
// hashes: image, user data with the node's labels and taints, security
// groups, profile, metadata options, block devices), not the overrides or
// subnets (those change with the unavailable offerings and the addresses
// in flight).
func launchKey(req *instance.LaunchRequest) string {
	var names []string
	for _, c := range req.Configs {
		names = append(names, c.LaunchTemplateName+"/"+c.CapacityReservationID)
	}
	slices.Sort(names)
	sum := sha256.Sum256([]byte(req.CapacityType + "\x00" + req.Context + "\x00" + strings.Join(names, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// capacityErrorCodes are the CreateFleet error codes that mean "no
// capacity for this offering right now".
var capacityErrorCodes = map[string]bool{
	"InsufficientInstanceCapacity": true,
	"InsufficientCapacity":         true,
	"InsufficientHostCapacity":     true,
	"InsufficientReservedCapacity": true,
	"ReservationCapacityExceeded":  true,
	"MaxSpotInstanceCountExceeded": true,
	"SpotMaxPriceTooLow":           true,
	"UnfulfillableCapacity":        true,
	"Unsupported":                  true,
	"VcpuLimitExceeded":            false,
	codeSubnetFull:                 true,
}

// codeSubnetFull is EC2's answer when the launch's subnet has no free
// address: the launch is repeated in another subnet of the zone, and only
// a zone without one is marked unavailable.
const codeSubnetFull = "InsufficientFreeAddressesInSubnet"

// Create launches an instance for the NodeClaim (see
// cloudprovider.CloudProvider).
func (p *Provider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	types, err := p.types.List(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("listing instance types: %w", err)
	}
	types = p.withReserved(ctx, nc, types)
	in, lookedUp, err := p.launchedBefore(ctx, nodeClaim)
	if err != nil {
		return nil, &cloudprovider.CreateError{Reason: ReasonLaunchFailed, Err: err}
	} else if in != nil {
		return p.launchedClaim(nodeClaim, nc, in, types), nil
	}
	reqs, err := apireq.NodeClaim(nodeClaim)
	if err != nil {
		return nil, &cloudprovider.CreateError{Reason: ReasonInvalidRequirements, Err: err}
	}
	options, _ := apireq.OrderedValues(nodeClaim.Spec.Requirements, karpv1.LabelInstanceType)
	plannedCT := ""
	if o := nodeClaim.Annotations[karpv1.AnnotationPlannedOffering]; o != "" {
		if i := strings.LastIndexByte(o, '/'); i >= 0 {
			plannedCT = o[i+1:]
		}
	}
	plan, err := PlanLaunchAt(types, reqs, options, plannedCT, nodeClaim.Spec.Resources.Requests, p.region, p.o.MaxInstanceTypes)
	if err != nil {
		return nil, err
	}
	if len(plan.Narrowed) > 0 {
		p.narrowed(nodeClaim, plan)
	}
	var empty int
	if nodeClaim.UID != "" {
		if r := p.launches.get(nodeClaim.UID); r != nil {
			empty = r.empty
		}
	}
	// full are the subnets EC2 found without a free address during this
	// call: the launch is repeated in the zone's next subnet.
	full := map[string]bool{}
	var res *instance.LaunchResult
	var images map[string]string
	for {
		picked := p.subnets.pick(nc.Status.Subnets, full)
		req, imgs, err := p.launchRequest(ctx, nodeClaim, nc, reqs, plan, picked)
		if err != nil {
			p.subnets.done(picked, "", p.o.Clock.Now())
			return nil, err
		}
		images = imgs
		if lookedUp {
			// Not found by its tag: an instance of an earlier launch may
			// still lack it (a crash between the fleet and its tagging).
			lookedUp = false
			in, err := p.adoptUntagged(ctx, nodeClaim, req)
			if err != nil {
				p.subnets.done(picked, "", p.o.Clock.Now())
				return nil, &cloudprovider.CreateError{Reason: ReasonLaunchFailed, Err: fmt.Errorf("looking for an untagged instance launched earlier: %w", err)}
			}
			if in != nil {
				p.subnets.done(picked, "", p.o.Clock.Now())
				in.ImageID = images[in.Type]
				return p.launchedClaim(nodeClaim, nc, in, types), nil
			}
		}
		if nodeClaim.UID != "" {
			req.ClientToken = clientToken(nodeClaim.UID, empty, req)
		}
		res, err = p.instances.Launch(ctx, req)
		launchedIn := ""
		var tagErr *instance.TagError
		if err == nil && res.Instance != nil {
			launchedIn = res.Instance.SubnetID
		} else if errors.As(err, &tagErr) {
			launchedIn = tagErr.Instance.SubnetID
		}
		p.subnets.done(picked, launchedIn, p.o.Clock.Now())
		if err != nil && nodeClaim.UID != "" && (tagErr != nil || !isAPIError(err)) {
			// An instance may run without the NodeClaim's tag (tagging
			// failed, or the fleet's answer was lost): the next Create of
			// the NodeClaim looks for it before launching.
			p.launches.update(nodeClaim.UID, p.o.Clock.Now(), func(r *launchRecord) { r.uncertain = true })
		}
		if err != nil && instance.IsIdempotentParameterMismatch(err) {
			// The token was spent on other parameters: only a launch of this
			// NodeClaim can have spent it. Adopt what it launched, if anything.
			if in, lerr := p.lookUpLaunched(ctx, nodeClaim); lerr == nil && in != nil {
				return p.launchedClaim(nodeClaim, nc, in, types), nil
			}
			p.launches.update(nodeClaim.UID, p.o.Clock.Now(), func(r *launchRecord) { r.empty = empty + 1 })
		}
		if err != nil {
			return nil, &cloudprovider.CreateError{Reason: ReasonLaunchFailed, Err: err}
		}
		if res.Instance == nil && nodeClaim.UID != "" {
			// EC2 bound the token to this answer: the next launch needs another.
			empty++
			p.launches.update(nodeClaim.UID, p.o.Clock.Now(), func(r *launchRecord) { r.empty = empty })
		}
		again := false
		for _, fe := range res.Errors {
			if fe.Code != codeSubnetFull || fe.SubnetID == "" || full[fe.SubnetID] {
				continue
			}
			full[fe.SubnetID] = true
			p.subnets.full(fe.SubnetID, p.o.Clock.Now())
			if res.Instance == nil && hasOther(nc.Status.Subnets, fe.Zone, full) {
				again = true
				p.o.Log.Info("subnet has no free address; launching in the zone's next subnet", "nodeclaim", nodeClaim.Name, "subnet", fe.SubnetID, "zone", fe.Zone)
			}
		}
		if !again {
			break
		}
	}
	var iced []cloudprovider.OfferingKey
	var other []instance.FleetError
	for _, fe := range res.Errors {
		switch {
		case fe.Code == codeSubnetFull && fe.Zone != "" && hasOther(nc.Status.Subnets, fe.Zone, full):
			// The zone has another subnet: its offerings stay available.
		case capacityErrorCodes[fe.Code] && fe.InstanceType != "" && fe.Zone != "":
			iced = append(iced, cloudprovider.OfferingKey{InstanceType: fe.InstanceType, Zone: fe.Zone, CapacityType: fe.CapacityType})
		default:
			other = append(other, fe)
		}
	}
	p.types.Unavailable().MarkUnavailable(iced...)
	if res.Instance == nil {
		if len(other) == 0 {
			return nil, cloudprovider.NewInsufficientCapacityError(errors.New("CreateFleet launched no instance"), iced...)
		}
		fe := other[0]
		return nil, &cloudprovider.CreateError{Reason: ReasonLaunchFailed,
			Err: fmt.Errorf("CreateFleet launched no instance: %s: %s (%s in %s)", fe.Code, fe.Message, fe.InstanceType, fe.Zone)}
	}
	in = res.Instance
	in.ImageID = images[in.Type]
	if in.CapacityReservationID != "" {
		p.launchedInto(in.CapacityReservationID)
	}
	for _, g := range nc.Status.SecurityGroups {
		in.SecurityGroupIDs = append(in.SecurityGroupIDs, g.ID)
	}
	slices.Sort(in.SecurityGroupIDs)
	in.LaunchTime = p.o.Clock.Now()
	// Drift reads the instance as launched: no DescribeInstances per check.
	p.instances.Remember(in)
	if nodeClaim.UID != "" {
		p.launches.update(nodeClaim.UID, in.LaunchTime, func(r *launchRecord) { r.instance = in })
	}
	return p.launchedClaim(nodeClaim, nc, in, types), nil
}

// launchedBefore returns the instance launched for the NodeClaim before
// this call, nil if there is none: the one this process launched, or one
// found by its tag when another process may have launched it (see
// idempotent.go). A failed lookup is an error: launching then could make a
// second instance.
//
// lookedUp reports a lookup that found nothing: the caller then also looks
// for an instance launched for the NodeClaim but not yet tagged with its
// name (adoptUntagged).
func (p *Provider) launchedBefore(ctx context.Context, nodeClaim *karpv1.NodeClaim) (in *instance.Instance, lookedUp bool, err error) {
	if nodeClaim.UID == "" {
		return nil, false, nil
	}
	r := p.launches.get(nodeClaim.UID)
	if r != nil && r.instance != nil {
		return r.instance, false, nil
	}
	now := p.o.Clock.Now()
	if !p.launches.mayHaveBeenLaunched(nodeClaim, now) && (r == nil || !r.uncertain) {
		p.launches.update(nodeClaim.UID, now, func(*launchRecord) {})
		return nil, false, nil
	}
	in, err = p.lookUpLaunched(ctx, nodeClaim)
	if err != nil {
		return nil, false, fmt.Errorf("looking for an instance launched earlier: %w", err)
	}
	if in == nil {
		p.launches.update(nodeClaim.UID, now, func(r *launchRecord) { r.uncertain = false })
	}
	return in, in == nil, nil
}

// adoptUntagged finds a pending or running instance of the cluster that a
// batched launch made for some NodeClaim but never tagged with its name
// (the process died, or CreateTags failed, between the fleet and the
// tagging), and that this NodeClaim's launch could have made: the same
// launch templates (TagLaunch), capacity type, and an (instance type,
// zone) among its overrides, launched after the NodeClaim was created. It
// tags the instance with the NodeClaim's name and records it as the
// NodeClaim's. Instances of a fleet this process still has in flight are
// left alone (their own callers are tagging them), and one instance is
// adopted by one NodeClaim of this process. Nil when there is none.
func (p *Provider) adoptUntagged(ctx context.Context, nodeClaim *karpv1.NodeClaim, req *instance.LaunchRequest) (*instance.Instance, error) {
	key := req.Tags[TagLaunch]
	if key == "" {
		return nil, nil
	}
	found, err := p.instances.Tagged(ctx, instance.Tag{Key: TagLaunch, Value: key})
	if err != nil {
		return nil, err
	}
	notBefore := nodeClaim.CreationTimestamp.Add(-launchClockSkew)
	var cands []*instance.Instance
	for _, in := range found {
		if !p.owned(in) || in.Tags[karpv1.NodeClaimTagKey] != "" || in.LaunchTime.Before(notBefore) ||
			p.instances.InFlight(in.Tags[instance.TagLaunchBatch]) || !launchable(req, in) {
			continue
		}
		cands = append(cands, in)
	}
	slices.SortFunc(cands, func(a, b *instance.Instance) int {
		if c := a.LaunchTime.Compare(b.LaunchTime); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, in := range cands {
		if !p.launches.adopt(in.ID) {
			continue // another NodeClaim of this process took it
		}
		if err := p.instances.CreateTags(ctx, in.ID, req.ClaimTags); err != nil {
			p.launches.release(in.ID)
			if instance.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		c := *in
		c.Tags = maps.Clone(in.Tags)
		maps.Copy(c.Tags, req.ClaimTags)
		p.o.Log.Info("adopting an instance launched for a NodeClaim and never tagged", "nodeclaim", nodeClaim.Name, "instance", c.ID, "launched", c.LaunchTime)
		p.launches.update(nodeClaim.UID, p.o.Clock.Now(), func(r *launchRecord) { r.instance, r.uncertain = &c, false })
		return &c, nil
	}
	return nil, nil
}

// launchable reports whether the request could have launched the
// instance: its capacity type (and reservation), and its (type, zone)
// among the overrides.
func launchable(req *instance.LaunchRequest, in *instance.Instance) bool {
	if in.CapacityType != req.CapacityType {
		return false
	}
	for _, c := range req.Configs {
		if req.CapacityType == cloudprovider.CapacityTypeReserved && c.CapacityReservationID != in.CapacityReservationID {
			continue
		}
		for _, o := range c.Overrides {
			if o.InstanceType == in.Type && o.Zone == in.Zone {
				return true
			}
		}
	}
	return false
}

// isAPIError reports whether EC2 answered (an API error): otherwise the
// call may have happened without its answer reaching us.
func isAPIError(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae)
}

// lookUpLaunched finds a pending or running instance of the cluster tagged
// with the NodeClaim's name and launched after it was created (with a
// margin for clock skew, so that a reused name never adopts an old
// instance), and records it as this NodeClaim's. With several, the first
// launched wins; garbage collection terminates the others once the
// NodeClaim records its instance.
func (p *Provider) lookUpLaunched(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*instance.Instance, error) {
	found, err := p.instances.Tagged(ctx, instance.Tag{Key: karpv1.NodeClaimTagKey, Value: nodeClaim.Name})
	if err != nil {
		return nil, err
	}
	notBefore := nodeClaim.CreationTimestamp.Add(-launchClockSkew)
	var best *instance.Instance
	for _, in := range found {
		if !p.owned(in) || in.LaunchTime.Before(notBefore) {
			continue
		}
		if best == nil || in.LaunchTime.Before(best.LaunchTime) || (in.LaunchTime.Equal(best.LaunchTime) && in.ID < best.ID) {
			best = in
		}
	}
	if best == nil {
		return nil, nil
	}
	p.o.Log.Info("adopting the instance launched for the NodeClaim earlier", "nodeclaim", nodeClaim.Name, "instance", best.ID, "launched", best.LaunchTime)
	p.launches.update(nodeClaim.UID, p.o.Clock.Now(), func(r *launchRecord) { r.instance = best })
	return best, nil
}

// launchClockSkew is how much earlier than its NodeClaim's creation an
// instance may have been launched and still be adopted (the API server's
// and EC2's clocks differ).
const launchClockSkew = 5 * time.Minute

// ReasonLaunchNarrowed is the event reason when a launch offers EC2 fewer
// of the NodeClaim's instance-type options than the engine planned.
const ReasonLaunchNarrowed = "LaunchNarrowed"

// narrowed says, in a warning event on the NodeClaim and a log line, which
// planned options the launch dropped and why.
func (p *Provider) narrowed(nodeClaim *karpv1.NodeClaim, plan Plan) {
	msg := fmt.Sprintf("launching %s on %d instance types; dropped since the plan: %s",
		plan.CapacityType, len(plan.Types), strings.Join(plan.Narrowed, ", "))
	p.o.Log.Info("launch narrowed", "nodeclaim", nodeClaim.Name, "dropped", plan.Narrowed)
	if p.o.Recorder != nil {
		p.o.Recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonLaunchNarrowed, "Launch", "%s", msg)
	}
}

// nodeLabels are the labels a node of the claim registers with: the
// claim's labels plus every single-valued requirement.
func nodeLabels(nodeClaim *karpv1.NodeClaim, reqs requirements.Requirements) map[string]string {
	labels := reqs.Labels()
	maps.Copy(labels, nodeClaim.Labels)
	return labels
}

// nodeTaints are the taints a node of the claim registers with.
func nodeTaints(nodeClaim *karpv1.NodeClaim) []corev1.Taint {
	t := append([]corev1.Taint(nil), nodeClaim.Spec.Taints...)
	t = append(t, nodeClaim.Spec.StartupTaints...)
	return append(t, karpv1.UnregisteredNoExecuteTaint)
}

// commonTags are the tags of the launch templates, and of the fleet and
// its instances, volumes and network interfaces with the NodeClaim's name
// added (identical for every claim of a pool and class, so templates are
// shared).
func (p *Provider) commonTags(nodeClaim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass) map[string]string {
	tags := maps.Clone(nc.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[TagClusterPrefix+p.o.ClusterName] = "owned"
	tags[awsv1.TagEKSClusterName] = p.o.ClusterName
	tags[karpv1.NodePoolTagKey] = nodeClaim.Labels[karpv1.NodePoolLabelKey]
	tags[awsv1.TagNodeClass] = nc.Name
	return tags
}

// launchRequest builds the launch templates (one per image) and the fleet
// request for a plan, launching in zone z's subnet subnetByZone[z]. images
// maps each planned type to its image.
func (p *Provider) launchRequest(ctx context.Context, nodeClaim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, reqs requirements.Requirements, plan Plan, subnetByZone map[string]string) (*instance.LaunchRequest, map[string]string, error) {
	family := nc.AMIFamily()
	in := userdata.Input{
		Family: family, ClusterName: p.o.ClusterName, ClusterEndpoint: p.o.ClusterEndpoint,
		ClusterCA: decodeCA(p.o.ClusterCA), ServiceCIDR: p.o.ServiceCIDR,
		Labels: nodeLabels(nodeClaim, reqs), Taints: nodeTaints(nodeClaim),
		Kubelet: nc.Spec.Kubelet, UserData: nc.Spec.UserData,
	}
	if k := nc.Spec.Kubelet; k == nil || len(k.ClusterDNS) == 0 {
		in.ClusterDNS = p.clusterDNS(ctx)
	}
	if nc.Spec.InstanceStorePolicy != nil {
		in.InstanceStorePolicy = string(*nc.Spec.InstanceStorePolicy)
	}
	data, err := userdata.Render(in)
	if err != nil {
		return nil, nil, &cloudprovider.CreateError{Reason: ReasonUserDataInvalid, Err: err}
	}
	mo := nodeclass.EffectiveMetadataOptions(nc.Spec.MetadataOptions)
	var sgs []string
	for _, g := range nc.Status.SecurityGroups {
		sgs = append(sgs, g.ID)
	}
	tags := p.commonTags(nodeClaim, nc)
	// The fleet's tags are the same for every NodeClaim of the pool and
	// class, so the launches of one decision share one CreateFleet; the
	// NodeClaim's name goes on its instance alone, by CreateTags after
	// the fleet (see doc.go, "Batched launches").
	req := &instance.LaunchRequest{CapacityType: plan.CapacityType, Tags: maps.Clone(tags),
		ClaimTags: map[string]string{karpv1.NodeClaimTagKey: nodeClaim.Name, awsv1.TagName: nodeClaim.Name}}
	if nc.Spec.Context != nil {
		req.Context = *nc.Spec.Context
	}
	// The options are in the engine's order. When NodeOverlays priced them
	// (dovetail.sh/price-overlays) and that order is not EC2's price
	// order, an on-demand or reserved fleet launches by priority, the
	// engine's first option first, rather than by EC2's lowest price;
	// spot keeps price-capacity-optimized.
	priority := map[string]*float64{}
	if plan.CapacityType != cloudprovider.CapacityTypeSpot && nodeClaim.Annotations[karpv1.AnnotationPriceOverlays] != "" && !priceOrdered(plan.Types) {
		req.Prioritized = true
		for i, pt := range plan.Types {
			p := float64(i)
			priority[pt.Type.Name] = &p
		}
	}
	// A fleet launches into default reservations (on-demand) or into
	// Capacity Blocks (market capacity-block), never both: a reserved
	// launch takes the type of its cheapest planned reservation, a
	// Capacity Block on a tie.
	resType := ""
	if plan.CapacityType == cloudprovider.CapacityTypeReserved {
		resType = launchReservationType(plan, subnetByZone)
		if resType == nodeclass.ReservationTypeCapacityBlock {
			req.MarketType = instance.MarketCapacityBlock
		}
	}
	images := map[string]string{}
	for _, ami := range nc.Status.AMIs {
		arch := ""
		for _, r := range ami.Requirements {
			if r.Key == karpv1.LabelArch && len(r.Values) == 1 {
				arch = r.Values[0]
			}
		}
		// Overrides by the reservation their template targets ("" for a
		// launch outside reservations): one template per reservation.
		byReservation := map[string][]instance.Override{}
		var reservations []string
		for _, pt := range plan.Types {
			if pt.Type.Labels[karpv1.LabelArch] != arch {
				continue
			}
			if _, done := images[pt.Type.Name]; done {
				continue
			}
			for _, o := range pt.Offerings {
				if sid, ok := subnetByZone[o.Zone]; ok {
					rid := ""
					if plan.CapacityType == cloudprovider.CapacityTypeReserved {
						if offeringReservationType(o) != resType {
							continue
						}
						rid = o.ReservationID
					}
					if _, seen := byReservation[rid]; !seen {
						reservations = append(reservations, rid)
					}
					byReservation[rid] = append(byReservation[rid], instance.Override{InstanceType: pt.Type.Name, SubnetID: sid, Zone: o.Zone, Priority: priority[pt.Type.Name]})
					images[pt.Type.Name] = ami.ID
				}
			}
		}
		for _, rid := range reservations {
			overrides := byReservation[rid]
			content := launchtemplate.Content{
				ImageID: ami.ID, UserData: data, SecurityGroupIDs: sgs, InstanceProfile: nc.Status.InstanceProfile,
				HTTPEndpoint: *mo.HTTPEndpoint, HTTPProtocolIPv6: *mo.HTTPProtocolIPv6,
				HTTPPutResponseHopLimit: *mo.HTTPPutResponseHopLimit, HTTPTokens: *mo.HTTPTokens,
				BlockDevices:       launchtemplate.BlockDevices(nc),
				DetailedMonitoring: nc.Spec.DetailedMonitoring != nil && *nc.Spec.DetailedMonitoring,
				AssociatePublicIP:  nc.Spec.AssociatePublicIPAddress,
				Tags:               tags,
			}
			content.ApplyNodeClass(nc)
			switch {
			case rid != "":
				content.CapacityReservationPreference, content.CapacityReservationID = "capacity-reservations-only", rid
				content.MarketType = req.MarketType
			case len(nc.Status.CapacityReservations) > 0:
				content.CapacityReservationPreference = "none"
			}
			tpl, err := p.templates.Ensure(ctx, content)
			if err != nil {
				return nil, nil, &cloudprovider.CreateError{Reason: ReasonLaunchTemplateFailed, Err: err}
			}
			req.Configs = append(req.Configs, instance.LaunchConfig{LaunchTemplateName: tpl.Name, Overrides: overrides, CapacityReservationID: rid})
		}
	}
	if len(req.Configs) == 0 {
		return nil, nil, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes,
			Err: errors.New("no planned instance type has an image of its architecture and a subnet in its zones")}
	}
	req.Tags[TagLaunch] = launchKey(req)
	return req, images, nil
}

// priceOrdered reports whether the planned types are in the cloud's price
// order (each type's cheapest offering no cheaper than the one before):
// then EC2's lowest-price choice is the engine's.
func priceOrdered(types []PlannedType) bool {
	for i := 1; i < len(types); i++ {
		if types[i].MinPrice < types[i-1].MinPrice {
			return false
		}
	}
	return true
}

// launchedClaim is the NodeClaim as launched: labels for the chosen type,
// zone and capacity type, and status with providerID, image, capacity and
// allocatable.
func (p *Provider) launchedClaim(nodeClaim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, in *instance.Instance, types []*cloudprovider.InstanceType) *karpv1.NodeClaim {
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	var it *cloudprovider.InstanceType
	for _, t := range types {
		if t.Name == in.Type {
			it = t
			break
		}
	}
	if it != nil {
		maps.Copy(out.Labels, it.Labels)
		out.Status.Capacity = filterZero(it.Capacity)
		out.Status.Allocatable = filterZero(it.Allocatable())
		for _, o := range it.Offerings {
			if o.Zone == in.Zone && o.ZoneID != "" {
				out.Labels[awsv1.LabelTopologyZoneID] = o.ZoneID
			}
		}
	}
	out.Labels[karpv1.LabelInstanceType] = in.Type
	out.Labels[karpv1.LabelTopologyZone] = in.Zone
	out.Labels[karpv1.LabelTopologyRegion] = p.region
	out.Labels[karpv1.CapacityTypeLabelKey] = in.CapacityType
	if in.CapacityReservationID != "" {
		out.Labels[awsv1.LabelCapacityReservationID] = in.CapacityReservationID
		out.Labels[awsv1.LabelCapacityReservationType] = reservationType(nc, in.CapacityReservationID)
	}
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = nodeclass.Hash(nc)
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = nodeclass.HashVersion
	// The instance carries the NodeClaim's name (tagged after the fleet,
	// or adopted and tagged).
	out.Annotations[awsv1.AnnotationInstanceTagged] = "true"
	out.Status.ProviderID = ProviderID(in.Zone, in.ID)
	out.Status.ImageID = in.ImageID
	return out
}

func filterZero(l corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if q := l[k]; !q.IsZero() {
			out[k] = q.DeepCopy()
		}
	}
	return out
}

// offeringReservationType is a reserved offering's reservation type
// (default when unset).
func offeringReservationType(o cloudprovider.Offering) string {
	if o.ReservationType == "" {
		return nodeclass.ReservationTypeDefault
	}
	return o.ReservationType
}

// launchReservationType is the reservation type a reserved launch uses:
// that of the cheapest planned offering in a zone with a subnet, a
// Capacity Block's on a tie.
func launchReservationType(plan Plan, subnetByZone map[string]string) string {
	best, price := nodeclass.ReservationTypeDefault, math.Inf(1)
	for _, pt := range plan.Types {
		for _, o := range pt.Offerings {
			if _, ok := subnetByZone[o.Zone]; !ok {
				continue
			}
			t := offeringReservationType(o)
			if o.Price < price || o.Price == price && t == nodeclass.ReservationTypeCapacityBlock {
				best, price = t, o.Price
			}
		}
	}
	return best
}

// reservationType is the type of a reservation the class resolved
// ("default" when it no longer lists it).
func reservationType(nc *awsv1.EC2NodeClass, id string) string {
	for _, cr := range nc.Status.CapacityReservations {
		if cr.ID == id && cr.ReservationType != "" {
			return cr.ReservationType
		}
	}
	return nodeclass.ReservationTypeDefault
}
