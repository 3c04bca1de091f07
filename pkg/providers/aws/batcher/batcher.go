package batcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Result is the outcome of one request.
type Result[Out any] struct {
	Out Out
	Err error
}

// ErrResultCount reports an Exec that returned a different number of
// results than it got requests.
var ErrResultCount = errors.New("batcher: exec returned the wrong number of results")

// ErrClosed is returned to requests made after the batcher's context ended.
var ErrClosed = errors.New("batcher: closed")

// Options configure a Batcher.
type Options[In, Out any] struct {
	// Name appears in errors.
	Name string
	// IdleWindow closes a bucket when no request joined it for this long.
	IdleWindow time.Duration
	// MaxWindow closes a bucket this long after it opened.
	MaxWindow time.Duration
	// MaxItems closes a bucket when it holds this many requests (0: no
	// limit).
	MaxItems int
	// Key groups requests: only requests with equal keys are batched
	// together. Nil puts every request in one bucket.
	Key func(In) string
	// Exec makes the combined call and returns one result per request.
	Exec func(ctx context.Context, ins []In) []Result[Out]
	// Clock defaults to the real clock.
	Clock clock.Clock
}

// Batcher combines requests. It is safe for concurrent use.
type Batcher[In, Out any] struct {
	opts    Options[In, Out]
	ctx     context.Context
	mu      sync.Mutex
	buckets map[string]*bucket[In, Out]
	calls   int
}

type request[In, Out any] struct {
	in   In
	done chan Result[Out]
}

type bucket[In, Out any] struct {
	reqs    []*request[In, Out]
	trigger chan struct{}
}

// New returns a Batcher whose Exec calls run with ctx; when ctx ends, new
// requests fail with ErrClosed.
func New[In, Out any](ctx context.Context, opts Options[In, Out]) *Batcher[In, Out] {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxWindow < opts.IdleWindow {
		opts.MaxWindow = opts.IdleWindow
	}
	return &Batcher[In, Out]{opts: opts, ctx: ctx, buckets: map[string]*bucket[In, Out]{}}
}

// Calls returns how many times Exec has been called.
func (b *Batcher[In, Out]) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// Add submits one request and waits for its result.
func (b *Batcher[In, Out]) Add(ctx context.Context, in In) (Out, error) {
	var zero Out
	if b.ctx.Err() != nil {
		return zero, ErrClosed
	}
	key := ""
	if b.opts.Key != nil {
		key = b.opts.Key(in)
	}
	req := &request[In, Out]{in: in, done: make(chan Result[Out], 1)}
	b.mu.Lock()
	bk := b.buckets[key]
	if bk == nil {
		bk = &bucket[In, Out]{trigger: make(chan struct{}, 1)}
		b.buckets[key] = bk
		go b.run(key, bk)
	}
	bk.reqs = append(bk.reqs, req)
	if b.opts.MaxItems > 0 && len(bk.reqs) >= b.opts.MaxItems {
		delete(b.buckets, key) // full: later requests open a new bucket
	}
	b.mu.Unlock()
	select {
	case bk.trigger <- struct{}{}:
	default:
	}
	select {
	case r := <-req.done:
		return r.Out, r.Err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func (b *Batcher[In, Out]) run(key string, bk *bucket[In, Out]) {
	c := b.opts.Clock
	deadline := c.Now().Add(b.opts.MaxWindow)
	timer := c.NewTimer(b.opts.IdleWindow)
	defer timer.Stop()
wait:
	for {
		select {
		case <-b.ctx.Done():
			break wait
		case <-timer.C():
			break wait
		case <-bk.trigger:
			b.mu.Lock()
			full := b.buckets[key] != bk
			b.mu.Unlock()
			if full {
				break wait
			}
			next := min(b.opts.IdleWindow, deadline.Sub(c.Now()))
			if next <= 0 {
				break wait
			}
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
			timer.Reset(next)
		}
	}
	b.mu.Lock()
	if b.buckets[key] == bk {
		delete(b.buckets, key)
	}
	reqs := bk.reqs
	b.calls++
	b.mu.Unlock()

	ins := make([]In, len(reqs))
	for i, r := range reqs {
		ins[i] = r.in
	}
	var results []Result[Out]
	if b.ctx.Err() != nil {
		results = make([]Result[Out], len(reqs))
		for i := range results {
			results[i].Err = ErrClosed
		}
	} else {
		results = b.opts.Exec(b.ctx, ins)
	}
	if len(results) != len(reqs) {
		err := fmt.Errorf("%w: %s got %d requests, returned %d results", ErrResultCount, b.opts.Name, len(reqs), len(results))
		results = make([]Result[Out], len(reqs))
		for i := range results {
			results[i].Err = err
		}
	}
	for i, r := range reqs {
		r.done <- results[i]
	}
}
