package provisioning_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
)

// waitResult runs Wait in a goroutine and reports when it returns.
func waitAsync(ctx context.Context, b *provisioning.Batcher) <-chan bool {
	out := make(chan bool, 1)
	go func() { out <- b.Wait(ctx) }()
	return out
}

// waitTimers blocks until n timers wait on the fake clock.
func waitTimers(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	controllerstest.Eventually(t, 10*time.Second, "batcher timers", func() (bool, error) {
		return clk.Waiters() >= n, nil
	})
}

func TestBatcherWindows(t *testing.T) {
	cases := []struct {
		name string
		// steps are clock advances, each followed by a trigger when
		// trigger is set; closedAfter is the step after which the window
		// must be closed (index into steps).
		steps       []time.Duration
		trigger     []bool
		closedAfter int
	}{
		{name: "closes after the idle time", steps: []time.Duration{999 * time.Millisecond, time.Millisecond}, trigger: []bool{false, false}, closedAfter: 1},
		{name: "a trigger extends the window", steps: []time.Duration{800 * time.Millisecond, 800 * time.Millisecond, 200 * time.Millisecond}, trigger: []bool{true, false, false}, closedAfter: 2},
		{name: "closes at the max under constant triggers", steps: repeat(900*time.Millisecond, 12), trigger: repeatBool(true, 12), closedAfter: 11},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			b := provisioning.NewBatcher(clk, time.Second, 10*time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := waitAsync(ctx, b)
			b.Trigger()
			waitTimers(t, clk, 2)
			for i, d := range tc.steps {
				clk.Step(d)
				closed := false
				select {
				case ok := <-done:
					if !ok {
						t.Fatal("Wait reported false without cancellation")
					}
					closed = true
				case <-time.After(50 * time.Millisecond):
				}
				if closed != (i == tc.closedAfter) {
					t.Fatalf("after step %d (%v in all): closed = %v, want closed only after step %d", i, sum(tc.steps[:i+1]), closed, tc.closedAfter)
				}
				if closed {
					return
				}
				if tc.trigger[i] {
					before := provisioning.Extensions(b)
					b.Trigger()
					controllerstest.Eventually(t, 10*time.Second, "the window extended", func() (bool, error) {
						return provisioning.Extensions(b) > before, nil
					})
				}
			}
			t.Fatal("the window never closed")
		})
	}
}

func TestBatcherStopsOnCancel(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := provisioning.NewBatcher(clk, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(ctx, b)
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Wait reported a batch after cancellation")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after cancellation")
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func repeatBool(v bool, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func sum(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}
