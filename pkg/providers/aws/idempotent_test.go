package aws_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
)

var uidSeq atomic.Int64

// apiClaim is e.claim as the API server returns it: with a UID and a
// creation time.
// freshClaim is a NodeClaim created now, as the API server returns it. Its
// timestamp is truncated to the second, so a claim made in the second the
// provider started would read as older than the provider (and be looked up
// before launch, as one another leader may have launched): a second is
// added.
func (e *env) freshClaim() *karpv1.NodeClaim { return e.apiClaim(time.Now().Add(time.Second)) }

func (e *env) apiClaim(created time.Time, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	nc := e.claim(reqs...)
	nc.UID = types.UID(fmt.Sprintf("0c6a7c52-7d0e-4d51-9a3b-%012d", uidSeq.Add(1)))
	nc.CreationTimestamp = metav1.NewTime(created.Truncate(time.Second))
	return nc
}

// liveInstances counts the emulator's pending and running instances
// tagged for the NodeClaim.
func (e *env) liveInstances(name string) []string {
	var ids []string
	for _, in := range e.emu.Instances() {
		if in.Tags[karpv1.NodeClaimTagKey] == name && (in.State == "pending" || in.State == "running") {
			ids = append(ids, in.ID)
		}
	}
	return ids
}

func (e *env) callCounts() map[string]int {
	out := map[string]int{}
	for _, c := range e.emu.Calls() {
		out[c.Action]++
	}
	return out
}

// The controller is killed after CreateFleet returned and before the
// NodeClaim recorded its instance; the restarted process (no caches, and
// here an offering the first launch could use marked unavailable, so that
// its request differs) launches the same NodeClaim again: it adopts the
// instance, found by its nodeclaim tag in one DescribeInstances call, and
// creates none.
func TestRelaunchAfterRestartAdoptsTheInstance(t *testing.T) {
	e := newEnv(t, envOptions{})
	reqs := []karpv1.NodeSelectorRequirementWithMinValues{in(karpv1.CapacityTypeLabelKey, "on-demand"), in(karpv1.LabelInstanceType, "m5.large", "c5.large", "m6i.large")}
	nc := e.apiClaim(time.Now().Add(-2*time.Second), reqs...)
	first, err := e.p.Create(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// The crash: first is never recorded on nc.
	p2 := e.restart()
	launchedType := first.Labels[karpv1.LabelInstanceType]
	var gone []cloudprovider.OfferingKey
	for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		gone = append(gone, cloudprovider.OfferingKey{InstanceType: launchedType, Zone: z, CapacityType: "on-demand"})
	}
	p2.Unavailable().MarkUnavailable(gone...)
	e.emu.ResetCalls()
	again, err := p2.Create(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != first.Status.ProviderID {
		t.Errorf("after the restart the NodeClaim got %s, want the instance launched before, %s", again.Status.ProviderID, first.Status.ProviderID)
	}
	if ids := e.liveInstances(nc.Name); len(ids) != 1 {
		t.Errorf("%d live instances for the NodeClaim (%v), want 1", len(ids), ids)
	}
	counts := e.callCounts()
	if counts["ec2:CreateFleet"] != 0 || counts["ec2:DescribeInstances"] != 1 {
		t.Errorf("the relaunch made %d CreateFleet and %d DescribeInstances calls, want 0 and 1 (%v)", counts["ec2:CreateFleet"], counts["ec2:DescribeInstances"], counts)
	}
	if again.Labels[karpv1.LabelInstanceType] != launchedType || again.Status.ImageID != first.Status.ImageID ||
		again.Status.Allocatable.Cpu().Cmp(*first.Status.Allocatable.Cpu()) != 0 {
		t.Errorf("adopted claim: type %s image %s cpu %s, want %s %s %s", again.Labels[karpv1.LabelInstanceType], again.Status.ImageID,
			again.Status.Allocatable.Cpu(), launchedType, first.Status.ImageID, first.Status.Allocatable.Cpu())
	}
	// The adopted instance is remembered: another Create is free.
	e.emu.ResetCalls()
	if third, err := p2.Create(e.ctx, nc); err != nil || third.Status.ProviderID != first.Status.ProviderID {
		t.Errorf("third Create: %v, %v", third, err)
	}
	if n := len(e.emu.Calls()); n != 0 {
		t.Errorf("a Create of a NodeClaim this process adopted made %d calls", n)
	}
}

// Concurrent lookups after a restart share one DescribeInstances call
// (and the look for untagged instances another); NodeClaims with nothing
// launched are then launched together, and a NodeClaim created by this
// process is never looked up.
func TestLookupsAfterRestartAreBatched(t *testing.T) {
	// Generous windows: the check is about combining, not timing.
	e := newEnv(t, envOptions{provider: awsprovider.Options{BatchIdle: 200 * time.Millisecond, BatchMax: 3 * time.Second}})
	reqs := in(karpv1.CapacityTypeLabelKey, "on-demand")
	old := []*karpv1.NodeClaim{}
	for range 6 {
		old = append(old, e.apiClaim(time.Now().Add(-time.Minute), reqs))
	}
	if _, err := e.p.Create(e.ctx, old[0]); err != nil { // the previous process launched one of them
		t.Fatal(err)
	}
	p2 := e.restart()
	if _, err := p2.Create(e.ctx, e.apiClaim(time.Now().Add(time.Second), reqs)); err != nil { // warm p2's caches
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	errs := make(chan error, len(old))
	for _, nc := range old {
		go func() { _, err := p2.Create(e.ctx, nc); errs <- err }()
	}
	for range old {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	counts := e.callCounts()
	t.Logf("calls for %d NodeClaims after a restart: %v", len(old), counts)
	// One lookup by the nodeclaim tag, one for untagged instances of the
	// same launch (adoptUntagged), and the five launches share one fleet.
	if counts["ec2:DescribeInstances"] > 2 || counts["ec2:CreateFleet"] != 1 {
		t.Errorf("%d DescribeInstances and %d CreateFleet calls for %d NodeClaims of which 1 was launched, want at most 2 and 1",
			counts["ec2:DescribeInstances"], counts["ec2:CreateFleet"], len(old))
	}
	for _, nc := range old {
		if ids := e.liveInstances(nc.Name); len(ids) != 1 {
			t.Errorf("NodeClaim %s has %d live instances, want 1", nc.Name, len(ids))
		}
	}
}

// The lookup is skipped for a NodeClaim this process did not see before
// but that is young (another leader's, just created): the client token
// covers it. The same request with the same token gets EC2's first answer
// (the same instance), no second instance.
func TestRepeatedLaunchGetsTheTokensInstance(t *testing.T) {
	e := newEnv(t, envOptions{})
	p2 := e.restart() // started before the NodeClaim was created
	reqs := in(karpv1.CapacityTypeLabelKey, "on-demand")
	for _, p := range []*awsprovider.Provider{e.p, p2} { // warm both caches
		if _, err := p.Create(e.ctx, e.apiClaim(time.Now().Add(time.Second), reqs)); err != nil {
			t.Fatal(err)
		}
	}
	// Created after p2 started, and young for p2 however slow this
	// machine is (the API server's clock a minute ahead).
	nc := e.apiClaim(time.Now().Add(time.Minute), reqs)
	first, err := e.p.Create(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	again, err := p2.Create(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != first.Status.ProviderID {
		t.Errorf("the repeated launch got %s, want %s", again.Status.ProviderID, first.Status.ProviderID)
	}
	if ids := e.liveInstances(nc.Name); len(ids) != 1 {
		t.Errorf("%d live instances for the NodeClaim (%v), want 1", len(ids), ids)
	}
	if counts := e.callCounts(); counts["ec2:CreateFleet"] != 1 || counts["ec2:DescribeInstances"] != 0 {
		t.Errorf("calls %v, want one CreateFleet (answered from its token) and no DescribeInstances", counts)
	}
}

// A launch EC2 answered without an instance spends its token: once the
// capacity is back, the retry of the same NodeClaim launches (a token of
// the UID alone would get the empty answer again for a day).
func TestRetryAfterAnEmptyAnswerLaunches(t *testing.T) {
	e := newEnv(t, envOptions{provider: awsprovider.Options{UnavailableTTL: 200 * time.Millisecond}})
	nc := e.apiClaim(time.Now(), in(karpv1.CapacityTypeLabelKey, "on-demand"), in(karpv1.LabelInstanceType, "m5.large"))
	e.emu.InjectICE("m5.large", "", "on-demand")
	if _, err := e.p.Create(e.ctx, nc); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("Create under ICE = %v, want insufficient capacity", err)
	}
	e.emu.ClearFaults()
	// Once the unavailable offerings expire, the request is the first one
	// again.
	pollUntil(t, "the ICE'd offerings expire", 10*time.Second, func() (bool, error) {
		return e.p.Unavailable().Len() == 0, nil
	})
	got, err := e.p.Create(e.ctx, nc)
	if err != nil {
		t.Fatalf("retry once the capacity is back: %v", err)
	}
	if !strings.Contains(got.Status.ProviderID, "/i-") {
		t.Errorf("providerID %q", got.Status.ProviderID)
	}
}
