package aws_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
)

// batchOptions: generous windows, the checks are about combining, not
// timing, and must hold on a loaded machine.
var batchOptions = envOptions{provider: awsprovider.Options{BatchIdle: time.Second, BatchMax: 10 * time.Second}}

// createAll creates the NodeClaims concurrently with p and returns each
// one's result and error, in order.
func createAll(e *env, p *awsprovider.Provider, claims []*karpv1.NodeClaim) ([]*karpv1.NodeClaim, []error) {
	got := make([]*karpv1.NodeClaim, len(claims))
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, nc := range claims {
		wg.Go(func() { got[i], errs[i] = p.Create(e.ctx, nc) })
	}
	wg.Wait()
	return got, errs
}

// claimOf maps the emulator's live instances to their nodeclaim tag.
func (e *env) claimOf() map[string]string {
	out := map[string]string{}
	for _, in := range e.emu.Instances() {
		if in.State == "pending" || in.State == "running" {
			out[in.ID] = in.Tags[karpv1.NodeClaimTagKey]
		}
	}
	return out
}

// TestConcurrentClaimsShareOneFleet: 50 NodeClaims of one pool created
// concurrently (one decision) make one CreateFleet for 50 instances; each
// NodeClaim gets its own instance, tagged with its name (one CreateTags
// per instance), and nothing is described.
func TestConcurrentClaimsShareOneFleet(t *testing.T) {
	e := newEnv(t, batchOptions)
	if _, err := e.p.Create(e.ctx, e.claim()); err != nil { // warm the caches
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	const n = 50
	var claims []*karpv1.NodeClaim
	for range n {
		claims = append(claims, e.freshClaim())
	}
	got, errs := createAll(e, e.p, claims)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	counts := e.callCounts()
	t.Logf("EC2 calls for %d concurrent launches: %v", n, counts)
	if counts["ec2:CreateFleet"] != 1 {
		t.Errorf("%d CreateFleet calls for %d NodeClaims of one pool, want 1", counts["ec2:CreateFleet"], n)
		for _, r := range e.emu.FleetRequests() {
			t.Logf("fleet %s: %d overrides, first %+v", r.FleetID, len(r.Overrides), r.Overrides[0])
		}
	}
	if counts["ec2:CreateTags"] != n || counts["ec2:DescribeInstances"] != 0 {
		t.Errorf("calls %v, want %d CreateTags (one per instance) and no DescribeInstances", counts, n)
	}
	owner := e.claimOf()
	seen := map[string]bool{}
	for i, nc := range got {
		id, err := awsprovider.ParseProviderID(nc.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Errorf("instance %s given to two NodeClaims", id)
		}
		seen[id] = true
		if owner[id] != claims[i].Name {
			t.Errorf("NodeClaim %s got instance %s tagged for %q", claims[i].Name, id, owner[id])
		}
		if in := e.instanceOf(nc.Status.ProviderID); in.Tags[awsv1.TagName] != claims[i].Name || in.Tags[awsprovider.TagLaunch] == "" {
			t.Errorf("instance %s tags %v", id, in.Tags)
		}
	}
}

// TestPartialFulfilmentPerClaim: the fleet of five NodeClaims finds room
// for two; those two get instances, the other three the fleet's
// insufficient-capacity error naming the offering, which is marked
// unavailable as for a single launch.
func TestPartialFulfilmentPerClaim(t *testing.T) {
	e := newEnv(t, batchOptions)
	reqs := []karpv1.NodeSelectorRequirementWithMinValues{in(karpv1.CapacityTypeLabelKey, "on-demand"),
		in(karpv1.LabelInstanceType, "m5.large"), in(karpv1.LabelTopologyZone, "us-east-1a")}
	if _, err := e.p.Create(e.ctx, e.claim(reqs...)); err != nil { // warm the caches
		t.Fatal(err)
	}
	e.emu.LimitCapacity("m5.large", "us-east-1a", "on-demand", 2)
	e.emu.ResetCalls()
	var claims []*karpv1.NodeClaim
	for range 5 {
		claims = append(claims, e.apiClaim(time.Now(), reqs...))
	}
	got, errs := createAll(e, e.p, claims)
	if n := e.callCounts()["ec2:CreateFleet"]; n != 1 {
		t.Errorf("%d CreateFleet calls, want 1", n)
	}
	want := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}
	launched, iced := 0, 0
	for i, err := range errs {
		var ice *cloudprovider.InsufficientCapacityError
		switch {
		case err == nil:
			launched++
			if id, _ := awsprovider.ParseProviderID(got[i].Status.ProviderID); e.claimOf()[id] != claims[i].Name {
				t.Errorf("NodeClaim %s: instance %s not tagged for it", claims[i].Name, id)
			}
		case errors.As(err, &ice):
			iced++
			if !slices.Contains(ice.Offerings, want) {
				t.Errorf("NodeClaim %s: %v, want the offering %v named", claims[i].Name, err, want)
			}
		default:
			t.Errorf("NodeClaim %s: %v", claims[i].Name, err)
		}
	}
	if launched != 2 || iced != 3 {
		t.Errorf("%d launched and %d insufficient capacity, want 2 and 3", launched, iced)
	}
	if !e.p.Unavailable().IsUnavailable(want) {
		t.Errorf("%v not marked unavailable", want)
	}
}

// TestRepeatedBatchGetsTheSameInstances: the same NodeClaims launched
// again by another process with the same requests (young NodeClaims, so
// no lookup) make a fleet with the same client token, which EC2 answers
// with the first fleet's instances: nothing launches twice.
func TestRepeatedBatchGetsTheSameInstances(t *testing.T) {
	e := newEnv(t, batchOptions)
	p2 := e.restart()
	reqs := in(karpv1.CapacityTypeLabelKey, "on-demand")
	for _, p := range []*awsprovider.Provider{e.p, p2} { // warm both caches
		if _, err := p.Create(e.ctx, e.apiClaim(time.Now().Add(time.Second), reqs)); err != nil {
			t.Fatal(err)
		}
	}
	var claims []*karpv1.NodeClaim
	for range 4 {
		claims = append(claims, e.apiClaim(time.Now().Add(time.Minute), reqs))
	}
	first, errs := createAll(e, e.p, claims)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	before := len(e.claimOf())
	e.emu.ResetCalls()
	again, errs := createAll(e, p2, claims)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		if again[i].Status.ProviderID != first[i].Status.ProviderID {
			t.Errorf("NodeClaim %s: the repeat got %s, want %s", claims[i].Name, again[i].Status.ProviderID, first[i].Status.ProviderID)
		}
	}
	if after := len(e.claimOf()); after != before {
		t.Errorf("%d live instances after the repeat, %d before", after, before)
	}
	if n := e.callCounts()["ec2:CreateFleet"]; n != 1 {
		t.Errorf("%d CreateFleet calls for the repeat, want 1 (answered from its token)", n)
	}
}

// TestCrashBetweenFleetAndTagging: the fleet launched, but its instances
// never got their NodeClaims' names (CreateTags denied here; a process
// killed between the calls leaves the same). The instances carry the
// cluster's tags, so List (garbage collection) sees them, nameless; the
// retry in the same process and a restarted process adopt them, one per
// NodeClaim, and launch nothing.
func TestCrashBetweenFleetAndTagging(t *testing.T) {
	e := newEnv(t, batchOptions)
	reqs := in(karpv1.CapacityTypeLabelKey, "on-demand")
	if _, err := e.p.Create(e.ctx, e.claim(reqs)); err != nil { // warm the caches
		t.Fatal(err)
	}
	if err := e.emu.DenyAction("ec2:CreateTags"); err != nil {
		t.Fatal(err)
	}
	var claims []*karpv1.NodeClaim
	for range 3 {
		claims = append(claims, e.apiClaim(time.Now(), reqs))
	}
	_, errs := createAll(e, e.p, claims)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("NodeClaim %s launched though its instance could not be tagged", claims[i].Name)
		}
	}
	untagged := map[string]bool{}
	for id, name := range e.claimOf() {
		if name == "" {
			untagged[id] = true
		}
	}
	if len(untagged) != 3 {
		t.Fatalf("%d instances without a NodeClaim's name, want 3", len(untagged))
	}
	listed, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	nameless := 0
	for _, c := range listed {
		if id, _ := awsprovider.ParseProviderID(c.Status.ProviderID); untagged[id] && c.Name == "" {
			nameless++
		}
	}
	if nameless != 3 {
		t.Errorf("List shows %d of the untagged instances (nameless), want 3: garbage collection must see them", nameless)
	}
	e.emu.ClearFaults()
	e.emu.ResetCalls()
	p2 := e.restart()
	got := make([]*karpv1.NodeClaim, len(claims))
	got[0], errs[0] = e.p.Create(e.ctx, claims[0]) // the retry, same process
	rest, restErrs := createAll(e, p2, claims[1:]) // after a restart
	copy(got[1:], rest)
	copy(errs[1:], restErrs)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := e.callCounts()["ec2:CreateFleet"]; n != 0 {
		t.Errorf("%d CreateFleet calls after the crash, want none (adopt)", n)
	}
	owner := e.claimOf()
	if len(owner) != 4 { // three adopted and the warm-up's
		t.Errorf("%d live instances, want 4: %v", len(owner), owner)
	}
	seen := map[string]bool{}
	for i, nc := range got {
		id, _ := awsprovider.ParseProviderID(nc.Status.ProviderID)
		if !untagged[id] || seen[id] || owner[id] != claims[i].Name {
			t.Errorf("NodeClaim %s got %s (untagged before: %v, tagged now for %q)", claims[i].Name, id, untagged[id], owner[id])
		}
		seen[id] = true
	}
}
