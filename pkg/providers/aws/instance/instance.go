package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/batcher"
)

// Instance is what the provider needs to know about an instance.
type Instance struct {
	ID           string
	Type         string
	Zone         string
	SubnetID     string
	ImageID      string
	CapacityType string // spot, on-demand or reserved
	// CapacityReservationID is the capacity reservation the instance runs
	// in (capacity type reserved), "" outside one.
	CapacityReservationID string
	State                 string
	PrivateDNSName        string
	SecurityGroupIDs      []string
	Tags                  map[string]string
	LaunchTime            time.Time
}

// Override is one (instance type, subnet) a fleet may launch into.
type Override struct {
	InstanceType string `json:"instanceType"`
	SubnetID     string `json:"subnetID"`
	Zone         string `json:"zone"`
}

// LaunchConfig is one launch template and its overrides.
type LaunchConfig struct {
	LaunchTemplateName string     `json:"launchTemplateName"`
	Overrides          []Override `json:"overrides"`
	// CapacityReservationID is the reservation the template targets
	// (a reserved launch), "" otherwise.
	CapacityReservationID string `json:"capacityReservationID,omitempty"`
}

// LaunchRequest is one instant fleet of one instance.
type LaunchRequest struct {
	// CapacityType is "spot", "on-demand" or "reserved" (an on-demand
	// fleet whose templates target capacity reservations).
	CapacityType string         `json:"capacityType"`
	Configs      []LaunchConfig `json:"configs"`
	// Tags go on the fleet, the instances, their volumes and network
	// interfaces.
	Tags    map[string]string `json:"tags"`
	Context string            `json:"context,omitempty"`
	// ClientToken makes the CreateFleet call idempotent ("" lets the SDK
	// draw one per call): EC2 answers a repeat with the same token and
	// parameters with the first call's fleet and instances, and a repeat
	// with other parameters with IdempotentParameterMismatch. Requests
	// with different tokens are never batched together.
	ClientToken string `json:"clientToken,omitempty"`
}

// IsIdempotentParameterMismatch reports whether err is EC2's answer to a
// client token reused with other parameters.
func IsIdempotentParameterMismatch(err error) bool {
	return apiCode(err) == "IdempotentParameterMismatch"
}

// FleetError is one entry of CreateFleet's error list.
type FleetError struct {
	InstanceType, Zone, SubnetID, CapacityType string
	Code, Message                              string
}

// LaunchResult is a caller's share of a fleet.
type LaunchResult struct {
	// Instance is nil when the fleet had no instance for this caller.
	Instance *Instance
	// Errors are the fleet's errors (shared by all callers of the batch).
	Errors []FleetError
}

// NotFoundError reports an instance that does not exist.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string { return "instance " + e.ID + " not found" }

// IsNotFound reports whether err is or wraps a *NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// Options configure a Provider.
type Options struct {
	EC2 *ec2.Client
	// BatchIdle and BatchMax are the batching windows (defaults 35 ms and
	// 1 s); BatchMaxItems caps ids per Describe/Terminate call (default 500)
	// and instances per fleet (default 1000).
	BatchIdle, BatchMax time.Duration
	Clock               clock.Clock
}

// Provider makes the calls. It is safe for concurrent use.
type Provider struct {
	ec2       *ec2.Client
	fleet     *batcher.Batcher[*LaunchRequest, *LaunchResult]
	describe  *batcher.Batcher[string, *Instance]
	tagged    *batcher.Batcher[Tag, []*Instance]
	terminate *batcher.Batcher[string, struct{}]
	clock     clock.Clock
	recent    recent
}

// Default batching windows.
const (
	DefaultBatchIdle = 35 * time.Millisecond
	DefaultBatchMax  = time.Second
)

// New returns a Provider whose batchers run until ctx ends.
func New(ctx context.Context, o Options) *Provider {
	if o.BatchIdle == 0 {
		o.BatchIdle = DefaultBatchIdle
	}
	if o.BatchMax == 0 {
		o.BatchMax = DefaultBatchMax
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	p := &Provider{ec2: o.EC2, clock: o.Clock}
	p.fleet = batcher.New(ctx, batcher.Options[*LaunchRequest, *LaunchResult]{
		Name: "CreateFleet", IdleWindow: o.BatchIdle, MaxWindow: o.BatchMax, MaxItems: 1000, Clock: o.Clock,
		Key: func(r *LaunchRequest) string {
			b, _ := json.Marshal(r)
			return string(b)
		},
		Exec: p.execFleet,
	})
	p.describe = batcher.New(ctx, batcher.Options[string, *Instance]{
		Name: "DescribeInstances", IdleWindow: o.BatchIdle, MaxWindow: o.BatchMax, MaxItems: 500, Clock: o.Clock,
		Exec: p.execDescribe,
	})
	p.tagged = batcher.New(ctx, batcher.Options[Tag, []*Instance]{
		Name: "DescribeInstances", IdleWindow: o.BatchIdle, MaxWindow: o.BatchMax, MaxItems: maxTagValues, Clock: o.Clock,
		Key:  func(t Tag) string { return t.Key },
		Exec: p.execTagged,
	})
	p.terminate = batcher.New(ctx, batcher.Options[string, struct{}]{
		Name: "TerminateInstances", IdleWindow: o.BatchIdle, MaxWindow: o.BatchMax, MaxItems: 500, Clock: o.Clock,
		Exec: p.execTerminate,
	})
	return p
}

// Launch launches one instance.
func (p *Provider) Launch(ctx context.Context, req *LaunchRequest) (*LaunchResult, error) {
	return p.fleet.Add(ctx, req)
}

// Get describes one instance (batched with concurrent Gets).
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) {
	return p.describe.Add(ctx, id)
}

// Tag is one tag key and value.
type Tag struct{ Key, Value string }

// maxTagValues caps the values of the one tag filter of a Tagged batch.
const maxTagValues = 100

// Tagged lists the pending and running instances with the tag (batched
// with concurrent calls for the same key: one DescribeInstances call for
// many values), and records them for Recent.
func (p *Provider) Tagged(ctx context.Context, tag Tag) ([]*Instance, error) {
	return p.tagged.Add(ctx, tag)
}

func (p *Provider) execTagged(ctx context.Context, tags []Tag) []batcher.Result[[]*Instance] {
	results := make([]batcher.Result[[]*Instance], len(tags))
	values := make([]string, len(tags))
	for i, t := range tags {
		values[i] = t.Value
	}
	key := tags[0].Key // a batch shares its key
	found, err := p.List(ctx, []ec2types.Filter{
		{Name: aws.String("tag:" + key), Values: unique(values)},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	})
	for i, t := range tags {
		if err != nil {
			results[i].Err = err
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(found)) {
			if in := found[id]; in.Tags[key] == t.Value {
				results[i].Out = append(results[i].Out, in)
			}
		}
	}
	return results
}

// Terminate terminates one instance (batched with concurrent calls).
func (p *Provider) Terminate(ctx context.Context, id string) error {
	_, err := p.terminate.Add(ctx, id)
	if err == nil || IsNotFound(err) {
		p.recent.drop(id)
	}
	return err
}

// Reboot reboots one instance in place (EC2 RebootInstances, not
// batched: repair reboots one node at a time).
func (p *Provider) Reboot(ctx context.Context, id string) error {
	_, err := p.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return fmt.Errorf("rebooting instance %s: %w", id, err)
	}
	return nil
}

// Retain forgets the records (see Recent) of instances learned before
// since that are not in live: call it with a List of every instance the
// caller owns that started at since.
func (p *Provider) Retain(live map[string]*Instance, since time.Time) {
	p.recent.retain(live, since)
}

// BatchCalls reports how many CreateFleet, DescribeInstances and
// TerminateInstances batches ran.
func (p *Provider) BatchCalls() (fleet, describe, terminate int) {
	return p.fleet.Calls(), p.describe.Calls(), p.terminate.Calls()
}

func tagList(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func (p *Provider) execFleet(ctx context.Context, reqs []*LaunchRequest) []batcher.Result[*LaunchResult] {
	req := reqs[0] // all equal
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(int32(len(reqs))),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(req.CapacityType),
		},
	}
	if req.CapacityType == "reserved" {
		// Into an on-demand capacity reservation: an on-demand fleet of
		// templates that target it.
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeOnDemand
	}
	if req.CapacityType == "spot" {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	if req.Context != "" {
		in.Context = aws.String(req.Context)
	}
	if req.ClientToken != "" {
		in.ClientToken = aws.String(req.ClientToken)
	}
	for _, c := range req.Configs {
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String(c.LaunchTemplateName), Version: aws.String("$Latest"),
			},
		}
		for _, o := range c.Overrides {
			cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType: ec2types.InstanceType(o.InstanceType), SubnetId: aws.String(o.SubnetID), AvailabilityZone: aws.String(o.Zone),
			})
		}
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, cfg)
	}
	tags := tagList(req.Tags)
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeFleet, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: tags})
	}
	results := make([]batcher.Result[*LaunchResult], len(reqs))
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil {
		err = fmt.Errorf("creating fleet: %w", err)
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	var errs []FleetError
	for _, e := range out.Errors {
		fe := FleetError{CapacityType: string(e.Lifecycle), Code: aws.ToString(e.ErrorCode), Message: aws.ToString(e.ErrorMessage)}
		if fe.CapacityType == "" || req.CapacityType == "reserved" {
			fe.CapacityType = req.CapacityType
		}
		if lo := e.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			fe.InstanceType = string(lo.Overrides.InstanceType)
			fe.Zone = aws.ToString(lo.Overrides.AvailabilityZone)
			fe.SubnetID = aws.ToString(lo.Overrides.SubnetId)
		}
		errs = append(errs, fe)
	}
	var instances []*Instance
	for _, fi := range out.Instances {
		inst := Instance{Type: string(fi.InstanceType), CapacityType: req.CapacityType, State: "pending", Tags: req.Tags}
		if fi.Lifecycle != "" {
			inst.CapacityType = string(fi.Lifecycle)
		}
		if lo := fi.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			inst.Zone = aws.ToString(lo.Overrides.AvailabilityZone)
			inst.SubnetID = aws.ToString(lo.Overrides.SubnetId)
			if inst.Type == "" {
				inst.Type = string(lo.Overrides.InstanceType)
			}
		}
		if req.CapacityType == "reserved" {
			inst.CapacityType = "reserved"
			inst.CapacityReservationID = reservationOf(req.Configs, inst.Type, inst.SubnetID)
		}
		for _, id := range fi.InstanceIds {
			c := inst
			c.ID = id
			instances = append(instances, &c)
		}
	}
	for i := range results {
		r := &LaunchResult{Errors: errs}
		if i < len(instances) {
			r.Instance = instances[i]
		}
		results[i].Out = r
	}
	return results
}

func (p *Provider) execDescribe(ctx context.Context, ids []string) []batcher.Result[*Instance] {
	results := make([]batcher.Result[*Instance], len(ids))
	found, err := p.List(ctx, []ec2types.Filter{{Name: aws.String("instance-id"), Values: unique(ids)}})
	for i, id := range ids {
		if err != nil {
			results[i].Err = err
			continue
		}
		if in, ok := found[id]; ok {
			results[i].Out = in
		} else {
			results[i].Err = &NotFoundError{ID: id}
		}
	}
	return results
}

func unique(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// List describes every instance matching the filters, by id (and records
// them for Recent).
func (p *Provider) List(ctx context.Context, filters []ec2types.Filter) (map[string]*Instance, error) {
	out := map[string]*Instance{}
	defer func() {
		now := p.clock.Now()
		for _, in := range out {
			p.recent.put(in, now)
		}
	}()
	pg := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(1000)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				i := fromEC2(in)
				out[i.ID] = i
			}
		}
	}
	return out, nil
}

// reservationOf is the reservation of the config whose overrides hold the
// (type, subnet) a reserved fleet launched.
func reservationOf(configs []LaunchConfig, typ, subnet string) string {
	for _, c := range configs {
		for _, o := range c.Overrides {
			if o.InstanceType == typ && o.SubnetID == subnet {
				return c.CapacityReservationID
			}
		}
	}
	return ""
}

func fromEC2(in ec2types.Instance) *Instance {
	i := &Instance{
		ID: aws.ToString(in.InstanceId), Type: string(in.InstanceType), SubnetID: aws.ToString(in.SubnetId),
		ImageID: aws.ToString(in.ImageId), PrivateDNSName: aws.ToString(in.PrivateDnsName),
		CapacityType: "on-demand", Tags: map[string]string{}, LaunchTime: aws.ToTime(in.LaunchTime),
	}
	if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		i.CapacityType = "spot"
	}
	if id := aws.ToString(in.CapacityReservationId); id != "" {
		i.CapacityType, i.CapacityReservationID = "reserved", id
	}
	if in.Placement != nil {
		i.Zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	if in.State != nil {
		i.State = string(in.State.Name)
	}
	for _, g := range in.SecurityGroups {
		i.SecurityGroupIDs = append(i.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	slices.Sort(i.SecurityGroupIDs)
	for _, t := range in.Tags {
		i.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return i
}

func (p *Provider) execTerminate(ctx context.Context, ids []string) []batcher.Result[struct{}] {
	results := make([]batcher.Result[struct{}], len(ids))
	u := unique(ids)
	_, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: u})
	if err != nil && apiCode(err) == "InvalidInstanceID.NotFound" && len(u) > 1 {
		// One missing id fails the whole call: retry one by one so the
		// others still terminate.
		per := map[string]error{}
		for _, id := range u {
			_, e := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			per[id] = e
		}
		for i, id := range ids {
			results[i].Err = terminateErr(id, per[id])
		}
		return results
	}
	for i, id := range ids {
		results[i].Err = terminateErr(id, err)
	}
	return results
}

func terminateErr(id string, err error) error {
	if err == nil {
		return nil
	}
	if apiCode(err) == "InvalidInstanceID.NotFound" {
		return &NotFoundError{ID: id}
	}
	return fmt.Errorf("terminating %s: %w", id, err)
}

// CreateTags puts tags on one instance.
func (p *Provider) CreateTags(ctx context.Context, id string, tags map[string]string) error {
	if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tagList(tags)}); err != nil {
		if apiCode(err) == "InvalidInstanceID.NotFound" {
			return &NotFoundError{ID: id}
		}
		return fmt.Errorf("tagging %s: %w", id, err)
	}
	return nil
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
