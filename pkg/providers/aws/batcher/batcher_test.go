package batcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
)

// recorder is an Exec that records its batches and answers in*10.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
}

func (r *recorder) exec(_ context.Context, ins []int) []Result[int] {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(ins))
	r.mu.Unlock()
	out := make([]Result[int], len(ins))
	for i, in := range ins {
		out[i] = Result[int]{Out: in * 10}
	}
	return out
}

func (r *recorder) get() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// waitFor polls cond with a deadline (no sleeps as synchronisation).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, time.Millisecond, what, poll.Bool(cond))
}

// stepUntil advances the fake clock by d whenever a timer waits, until
// done (or the deadline). One step is not enough: a bucket's goroutine may
// take an Add's trigger after the step and re-arm its idle timer from the
// new now, and its first timer may not exist yet (a hang seen under load).
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, d time.Duration, what string, done func() bool) {
	t.Helper()
	waitFor(t, what, func() bool {
		if done() {
			return true
		}
		if clk.HasWaiters() {
			clk.Step(d)
		}
		return false
	})
}

func pending[In, Out any](b *Batcher[In, Out], key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk := b.buckets[key]; bk != nil {
		return len(bk.reqs)
	}
	return 0
}

type outcome struct {
	in, out int
	err     error
}

func addAll(ctx context.Context, b *Batcher[int, int], ins []int) chan outcome {
	ch := make(chan outcome, len(ins))
	for _, in := range ins {
		go func() {
			out, err := b.Add(ctx, in)
			ch <- outcome{in, out, err}
		}()
	}
	return ch
}

func TestIdleWindowCombines(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recorder{}
	b := New(context.Background(), Options[int, int]{IdleWindow: 50 * time.Millisecond, MaxWindow: time.Second, Exec: rec.exec, Clock: clk})
	ch := addAll(context.Background(), b, []int{1, 2, 3, 4, 5})
	waitFor(t, "5 pending requests", func() bool { return pending(b, "") == 5 })
	if len(rec.get()) != 0 {
		t.Fatal("Exec ran before the window closed")
	}
	stepUntil(t, clk, 50*time.Millisecond, "the batch to run", func() bool { return len(rec.get()) > 0 })
	for range 5 {
		o := <-ch
		if o.err != nil || o.out != o.in*10 {
			t.Errorf("Add(%d) = %d, %v; want %d", o.in, o.out, o.err, o.in*10)
		}
	}
	if got := rec.get(); len(got) != 1 || len(got[0]) != 5 {
		t.Errorf("batches = %v, want one batch of 5", got)
	}
	if b.Calls() != 1 {
		t.Errorf("Calls() = %d", b.Calls())
	}
}

func TestKeysSeparateBatches(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recorder{}
	b := New(context.Background(), Options[int, int]{
		IdleWindow: 10 * time.Millisecond, Exec: rec.exec, Clock: clk,
		Key: func(i int) string { return fmt.Sprint(i % 2) },
	})
	ch := addAll(context.Background(), b, []int{1, 2, 3, 4})
	waitFor(t, "two buckets of two", func() bool { return pending(b, "0") == 2 && pending(b, "1") == 2 })
	stepUntil(t, clk, 10*time.Millisecond, "both batches to run", func() bool { return len(rec.get()) == 2 })
	for range 4 {
		if o := <-ch; o.err != nil {
			t.Fatal(o.err)
		}
	}
	got := rec.get()
	if len(got) != 2 {
		t.Fatalf("batches = %v, want 2", got)
	}
	for _, batch := range got {
		if len(batch) != 2 || batch[0]%2 != batch[1]%2 {
			t.Errorf("batch %v mixes keys", batch)
		}
	}
}

func TestMaxItemsFlushesAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recorder{}
	b := New(context.Background(), Options[int, int]{IdleWindow: time.Hour, MaxItems: 3, Exec: rec.exec, Clock: clk})
	ch := addAll(context.Background(), b, []int{1, 2, 3})
	for range 3 { // no clock step: the full bucket closes by itself
		if o := <-ch; o.err != nil {
			t.Fatal(o.err)
		}
	}
	if got := rec.get(); len(got) != 1 || len(got[0]) != 3 {
		t.Errorf("batches = %v, want one of 3", got)
	}
}

func TestMaxWindowBoundsWaiting(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recorder{}
	b := New(context.Background(), Options[int, int]{IdleWindow: 40 * time.Millisecond, MaxWindow: 100 * time.Millisecond, Exec: rec.exec, Clock: clk})
	first := addAll(context.Background(), b, []int{1})
	waitFor(t, "first request", func() bool { return pending(b, "") == 1 })
	// Keep the bucket busy: a new request every 30ms never lets it idle.
	for i := 2; i <= 4; i++ {
		waitFor(t, "timer", clk.HasWaiters)
		clk.Step(30 * time.Millisecond)
		addAll(context.Background(), b, []int{i})
		waitFor(t, "request joined", func() bool { return pending(b, "") == i || len(rec.get()) > 0 })
	}
	// 90ms have passed; 10 more reach MaxWindow although the bucket is not idle.
	waitFor(t, "timer", clk.HasWaiters)
	clk.Step(10 * time.Millisecond)
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	if got := rec.get(); len(got) != 1 || len(got[0]) != 4 {
		t.Errorf("batches = %v, want one of 4", got)
	}
}

func TestWrongResultCount(t *testing.T) {
	b := New(context.Background(), Options[int, int]{
		Name: "short", IdleWindow: time.Millisecond,
		Exec: func(context.Context, []int) []Result[int] { return nil },
	})
	if _, err := b.Add(context.Background(), 1); !errors.Is(err, ErrResultCount) {
		t.Fatalf("err = %v, want ErrResultCount", err)
	}
}

func TestCallerContextAndClose(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recorder{}
	bctx, stop := context.WithCancel(context.Background())
	b := New(bctx, Options[int, int]{IdleWindow: time.Hour, Exec: rec.exec, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	ch := addAll(ctx, b, []int{7})
	waitFor(t, "pending", func() bool { return pending(b, "") == 1 })
	cancel()
	if o := <-ch; !errors.Is(o.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", o.err)
	}
	stop()
	if _, err := b.Add(context.Background(), 8); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after close = %v, want ErrClosed", err)
	}
}
