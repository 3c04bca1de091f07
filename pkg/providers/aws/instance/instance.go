package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// MarketCapacityBlock is the market type of launches into Capacity Blocks.
const MarketCapacityBlock = "capacity-block"

// Override is one (instance type, subnet) a fleet may launch into.
type Override struct {
	InstanceType string `json:"instanceType"`
	SubnetID     string `json:"subnetID"`
	Zone         string `json:"zone"`
	// Priority is the override's place in a prioritized fleet (0 first);
	// nil leaves it unset (lowest-price fleets).
	Priority *float64 `json:"priority,omitempty"`
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
	CapacityType string `json:"capacityType"`
	// MarketType is capacity-block for a reserved launch into Capacity
	// Blocks (the fleet's target capacity type), "" otherwise.
	MarketType string         `json:"marketType,omitempty"`
	Configs    []LaunchConfig `json:"configs"`
	// Prioritized: an on-demand (or reserved) fleet launches by the
	// overrides' priorities (allocation strategy prioritized) instead of
	// EC2's lowest price; set when the caller's order is not EC2's price
	// order (a NodeOverlay changed the prices the options were ranked by).
	Prioritized bool `json:"prioritized,omitempty"`
	// Tags go on the fleet, the instances, their volumes and network
	// interfaces.
	Tags    map[string]string `json:"tags"`
	Context string            `json:"context,omitempty"`
	// ClaimTags are the caller's own tags (its NodeClaim's name): put on
	// its instance alone, by CreateTags once the fleet answered. They are
	// not part of the batch key.
	ClaimTags map[string]string `json:"-"`
	// ClientToken is the caller's idempotency token ("" lets the SDK draw
	// one per call). It is not part of the batch key: the fleet's token is
	// derived from its callers' tokens (see batchToken), so a repeat of
	// the same batch gets EC2's first answer, the same instances, and a
	// repeat with other parameters IdempotentParameterMismatch.
	ClientToken string `json:"clientToken,omitempty"`
}

// TagLaunchBatch is the tag every instance of one CreateFleet call gets
// at launch: the fleet's client token (or a process-unique id without
// one). While the call and the tagging of its instances for their callers
// are in flight, InFlight reports the batch, so a lookup for instances not
// yet tagged for a NodeClaim leaves them alone.
const TagLaunchBatch = "dovetail.sh/launch-batch"

// batchKey is a request without its per-caller parts: requests with equal
// keys share one CreateFleet.
func batchKey(r *LaunchRequest) string {
	c := *r
	c.ClientToken = ""
	c.ClaimTags = nil
	b, _ := json.Marshal(&c)
	return string(b)
}

// batchToken is the fleet's client token: a single caller's own token, or
// for several a digest of their sorted tokens (within EC2's 64
// characters), so the same callers with the same requests make the same
// token. "" when a caller has none.
func batchToken(reqs []*LaunchRequest) string {
	tokens := make([]string, len(reqs))
	for i, r := range reqs {
		if r.ClientToken == "" {
			return ""
		}
		tokens[i] = r.ClientToken
	}
	if len(tokens) == 1 {
		return tokens[0]
	}
	slices.Sort(tokens)
	sum := sha256.Sum256([]byte(strings.Join(tokens, "\n")))
	return "batch-" + strconv.Itoa(len(tokens)) + "-" + hex.EncodeToString(sum[:24])
}

// TagError reports a launched instance that did not get its caller's
// tags: it runs, carries the common tags and TagLaunchBatch, but not the
// NodeClaim's name.
type TagError struct {
	Instance *Instance
	Err      error
}

func (e *TagError) Error() string {
	return "tagging instance " + e.Instance.ID + " for its NodeClaim: " + e.Err.Error()
}

func (e *TagError) Unwrap() error { return e.Err }

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

	mu       sync.Mutex
	inflight map[string]int // TagLaunchBatch values of fleets in flight
	batches  int            // ids of batches without a token
	started  int64
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
	p := &Provider{ec2: o.EC2, clock: o.Clock, inflight: map[string]int{}, started: o.Clock.Now().UnixNano()}
	p.fleet = batcher.New(ctx, batcher.Options[*LaunchRequest, *LaunchResult]{
		Name: "CreateFleet", IdleWindow: o.BatchIdle, MaxWindow: o.BatchMax, MaxItems: 1000, Clock: o.Clock,
		Key:  batchKey,
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

// InFlight reports whether a CreateFleet call whose instances carry
// TagLaunchBatch=batch is in flight in this process, or its instances are
// still being tagged for their callers.
func (p *Provider) InFlight(batch string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight[batch] > 0
}

// begin marks a batch in flight and returns its TagLaunchBatch value.
func (p *Provider) begin(token string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := token
	if id == "" {
		p.batches++
		id = fmt.Sprintf("run-%x-%d", p.started, p.batches)
	}
	p.inflight[id]++
	return id
}

func (p *Provider) end(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight[id]--; p.inflight[id] <= 0 {
		delete(p.inflight, id)
	}
}

// tagParallelism bounds the CreateTags calls of one batch in flight.
const tagParallelism = 16

func (p *Provider) execFleet(ctx context.Context, reqs []*LaunchRequest) []batcher.Result[*LaunchResult] {
	req := reqs[0] // all equal but for ClaimTags and ClientToken
	token := batchToken(reqs)
	batch := p.begin(token)
	defer p.end(batch)
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(int32(len(reqs))),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(req.CapacityType),
		},
	}
	if req.CapacityType == "reserved" {
		// Into an on-demand capacity reservation: an on-demand fleet of
		// templates that target it; into a Capacity Block: a
		// capacity-block fleet.
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeOnDemand
		if req.MarketType == MarketCapacityBlock {
			in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
		}
	}
	if req.CapacityType == "spot" {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
		if req.Prioritized {
			in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
		}
	}
	if req.Context != "" {
		in.Context = aws.String(req.Context)
	}
	if token != "" {
		in.ClientToken = aws.String(token)
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
				Priority: o.Priority,
			})
		}
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, cfg)
	}
	common := maps.Clone(req.Tags)
	if common == nil {
		common = map[string]string{}
	}
	common[TagLaunchBatch] = batch
	tags := tagList(common)
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
		inst := Instance{Type: string(fi.InstanceType), CapacityType: req.CapacityType, State: "pending"}
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
	// Instances go to the callers in the order of their tokens (arrival
	// order without tokens): a repeat of the batch, answered by EC2 from
	// the token with the same instances in the same order, gives each
	// caller the instance it got the first time.
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(reqs[a].ClientToken, reqs[b].ClientToken) })
	// The callers' own tags, one CreateTags per instance (EC2 tags many
	// resources in one call only with the same tags).
	sem := make(chan struct{}, tagParallelism)
	var wg sync.WaitGroup
	for k, i := range order {
		r := &LaunchResult{Errors: errs}
		results[i].Out = r
		if k >= len(instances) {
			continue
		}
		in := instances[k]
		in.Tags = maps.Clone(common)
		maps.Copy(in.Tags, reqs[i].ClaimTags)
		r.Instance = in
		if len(reqs[i].ClaimTags) == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := p.CreateTags(ctx, in.ID, reqs[i].ClaimTags); err != nil {
				results[i].Err = &TagError{Instance: in, Err: err}
			}
		}()
	}
	wg.Wait()
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
