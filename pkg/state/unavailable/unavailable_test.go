package unavailable_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

var (
	spotA = cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
	spotB = cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1b", CapacityType: "spot"}
)

func TestEntriesExpireAfterTTL(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		elapsed time.Duration
		want    bool
	}{
		{"just recorded", 0, true},
		{"one second before the TTL", unavailable.DefaultTTL - time.Second, true},
		{"at the TTL", unavailable.DefaultTTL, false},
		{"long after", time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			c := unavailable.New(clk, 0)
			c.MarkUnavailable(spotA)
			clk.Step(tt.elapsed)
			if got := c.IsUnavailable(spotA); got != tt.want {
				t.Fatalf("IsUnavailable after %s = %v, want %v", tt.elapsed, got, tt.want)
			}
			if got := c.IsUnavailable(spotB); got {
				t.Fatal("an offering never recorded is unavailable")
			}
			wantLen := 0
			if tt.want {
				wantLen = 1
			}
			if c.Len() != wantLen {
				t.Fatalf("Len = %d, want %d", c.Len(), wantLen)
			}
		})
	}
}

func TestMarkingAgainExtendsTheEntryAndGenerationTracksChanges(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	c := unavailable.New(clk, time.Minute)
	g0 := c.Generation()
	c.MarkUnavailable(spotA)
	g1 := c.Generation()
	if g1 == g0 {
		t.Fatal("generation did not change on a new entry")
	}
	clk.Step(40 * time.Second)
	c.MarkUnavailable(spotA) // now expires at 100 s
	clk.Step(40 * time.Second)
	if !c.IsUnavailable(spotA) {
		t.Fatal("re-marked entry expired at its first deadline")
	}
	g2 := c.Generation()
	if g2 == g1 {
		t.Fatal("generation did not change when an entry was refreshed")
	}
	if c.Generation() != g2 {
		t.Fatal("generation changed without a change")
	}
	clk.Step(30 * time.Second)
	if c.Generation() == g2 {
		t.Fatal("generation did not change when the entry expired")
	}
	if got := c.List(); len(got) != 0 {
		t.Fatalf("List after expiry = %v", got)
	}
}

func TestListIsSortedAndConcurrentUseIsSafe(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	c := unavailable.New(clk, 0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				k := cloudprovider.OfferingKey{InstanceType: fmt.Sprintf("t%02d", (i*50+j)%40), Zone: "z", CapacityType: "spot"}
				c.MarkUnavailable(k)
				_ = c.IsUnavailable(k)
			}
		}()
	}
	wg.Wait()
	got := c.List()
	if len(got) != 40 {
		t.Fatalf("List has %d entries, want 40", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Offering.String() >= got[i].Offering.String() {
			t.Fatalf("List not sorted at %d: %v then %v", i, got[i-1].Offering, got[i].Offering)
		}
	}
	if want := clk.Now().Add(unavailable.DefaultTTL); !got[0].Until.Equal(want) {
		t.Fatalf("Until = %v, want %v", got[0].Until, want)
	}
}
