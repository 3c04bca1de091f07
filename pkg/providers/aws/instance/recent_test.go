package instance_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
)

// TestRecentCostsNoCallPerQuestion: an instance recorded at launch is read
// back by Recent without a call while its record is young; once records
// are older than maxAge, one DescribeInstances refreshes every stale one
// at once, and an instance that is gone is NotFound.
func TestRecentCostsNoCallPerQuestion(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	bctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	p := instance.New(bctx, instance.Options{EC2: f.ec2, BatchIdle: 30 * time.Millisecond, Clock: clk})
	// The batch windows run on the fake clock too: keep it moving, 10 ms
	// a millisecond (far below maxAge over the test's run).
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-tick.C:
				clk.Step(10 * time.Millisecond)
			}
		}
	}()

	const n = 6
	var ids []string
	for range n {
		r, err := p.Launch(ctx, f.req)
		if err != nil || r.Instance == nil {
			t.Fatalf("launch: %v %+v", err, r)
		}
		r.Instance.ImageID = "ami-as-launched"
		p.Remember(r.Instance)
		ids = append(ids, r.Instance.ID)
	}
	const maxAge = 5 * time.Minute
	before := count(f.e, "ec2:DescribeInstances")
	for range 3 {
		for _, id := range ids {
			in, err := p.Recent(ctx, id, maxAge)
			if err != nil {
				t.Fatal(err)
			}
			if in.ImageID != "ami-as-launched" {
				t.Errorf("Recent(%s) = image %q, want the record made at launch", id, in.ImageID)
			}
		}
	}
	if got := count(f.e, "ec2:DescribeInstances") - before; got != 0 {
		t.Errorf("%d DescribeInstances calls for %d questions about recorded instances, want 0", got, 3*n)
	}

	// Every record stale: the first question refreshes them all.
	clk.Step(maxAge + time.Second)
	if err := p.Terminate(ctx, ids[n-1]); err != nil {
		t.Fatal(err)
	}
	before = count(f.e, "ec2:DescribeInstances")
	for _, id := range ids[:n-1] {
		in, err := p.Recent(ctx, id, maxAge)
		if err != nil {
			t.Fatal(err)
		}
		if in.ImageID == "ami-as-launched" || in.ImageID == "" {
			t.Errorf("Recent(%s) after maxAge = image %q, want the described one", id, in.ImageID)
		}
	}
	if got := count(f.e, "ec2:DescribeInstances") - before; got != 1 {
		t.Errorf("%d DescribeInstances calls to refresh %d stale records, want 1", got, n-1)
	}
	if p.Remembered() != n-1 {
		t.Errorf("%d records held, want %d (the terminated instance forgotten)", p.Remembered(), n-1)
	}
	if _, err := p.Recent(ctx, "i-0000000000000dead", maxAge); !instance.IsNotFound(err) {
		t.Errorf("Recent of an unknown instance: %v, want NotFound", err)
	}
}
