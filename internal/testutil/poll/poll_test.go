package poll_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
)

// recorder is a testing.TB that records Fatalf instead of stopping the
// goroutine, so the failure paths can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	for _, a := range args {
		if s, ok := a.(string); ok {
			r.failed += " " + s
		}
		if e, ok := a.(error); ok && e != nil {
			r.failed += " " + e.Error()
		}
	}
	panic(r)
}

func run(r *recorder, f func()) {
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
	}()
	f()
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	poll.Until(t, 5*time.Second, time.Millisecond, "three calls", func() (bool, error) {
		if n.Add(1) < 3 {
			return false, errors.New("not yet")
		}
		return true, nil
	})
	if got := n.Load(); got != 3 {
		t.Fatalf("cond called %d times, want 3", got)
	}
}

func TestUntilFailsWithTheLastError(t *testing.T) {
	r := &recorder{TB: t}
	run(r, func() {
		poll.Until(r, 20*time.Millisecond, time.Millisecond, "never", func() (bool, error) { return false, errors.New("still pending") })
	})
	if !strings.Contains(r.failed, "never") || !strings.Contains(r.failed, "still pending") {
		t.Fatalf("failure %q does not name what was awaited and the last error", r.failed)
	}
}

func TestWhileFailsAtTheFirstMiss(t *testing.T) {
	r := &recorder{TB: t}
	var n atomic.Int32
	run(r, func() {
		poll.While(r, 5*time.Second, time.Millisecond, "holds twice", poll.Bool(func() bool { return n.Add(1) <= 2 }))
	})
	if r.failed == "" || n.Load() != 3 {
		t.Fatalf("failed %q after %d checks, want a failure at the third", r.failed, n.Load())
	}
	poll.While(t, 10*time.Millisecond, time.Millisecond, "always", poll.Bool(func() bool { return true }))
}
