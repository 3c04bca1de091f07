package demo

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure Run.
type Options struct {
	// Client is an admin client of the cluster (required).
	Client client.Client
	// Interrupt sends a spot interruption for a node (required).
	Interrupt func(ctx context.Context, node string) error
	// Out takes the view; TTY selects the screen renderer, Width its
	// width.
	Out   io.Writer
	TTY   bool
	Width int
	// Tick is the refresh interval (1 s when zero).
	Tick time.Duration
	// ExitWhenDone returns once the scenario completed (after a last
	// refresh); otherwise Run keeps showing the cluster until ctx ends.
	ExitWhenDone bool
	// StepTimeout bounds each of the scenario's waits.
	StepTimeout time.Duration
	// Now is the clock of the samples (time.Now when nil).
	Now func() time.Time
}

// Run plays the scenario (RunScenario) while refreshing the view every
// Tick. It returns when ctx ends (nil), when the scenario fails (its
// error), or, with ExitWhenDone, when the scenario has completed.
func Run(ctx context.Context, o Options) error {
	if o.Client == nil || o.Interrupt == nil {
		return fmt.Errorf("demo: Client and Interrupt are required")
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	view := NewView(o.Out, o.TTY, o.Width)
	var mu sync.Mutex
	var notes []Event
	note := func(text string) {
		mu.Lock()
		notes = append(notes, Event{Time: o.Now(), Text: text})
		mu.Unlock()
	}
	done := make(chan error, 1)
	go func() {
		done <- RunScenario(ctx, Driver{Client: o.Client, Interrupt: o.Interrupt, Note: note, StepTimeout: o.StepTimeout})
	}()

	since := o.Now().Add(-time.Minute)
	refresh := func() error {
		s, err := Collect(ctx, o.Client, o.Now())
		if err != nil {
			return err
		}
		evs, err := Events(ctx, o.Client, since)
		if err != nil {
			return err
		}
		mu.Lock()
		pending := append(notes, evs...)
		notes = nil
		mu.Unlock()
		sortEvents(pending)
		for _, e := range pending {
			view.Note(e)
		}
		if len(evs) > 0 {
			since = evs[len(evs)-1].Time
		}
		return view.Render(s)
	}

	t := time.NewTicker(o.Tick)
	defer t.Stop()
	var scenarioDone bool
	for {
		if err := refresh(); err != nil && ctx.Err() == nil {
			view.Note(Event{Time: o.Now(), Text: "refresh failed: " + err.Error()})
		}
		if scenarioDone && o.ExitWhenDone {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				_ = refresh()
				return fmt.Errorf("demo scenario: %w", err)
			}
			scenarioDone = true
		case <-t.C:
		}
	}
}

func sortEvents(evs []Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].Time.Before(evs[j-1].Time); j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}
