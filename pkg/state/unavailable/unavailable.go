package unavailable

import (
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// DefaultTTL is how long a refused offering stays unavailable: three
// minutes, the figure users of the peer know.
const DefaultTTL = 3 * time.Minute

// Cache is the set of offerings currently known to lack capacity.
type Cache struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu         sync.Mutex
	until      map[cloudprovider.OfferingKey]time.Time
	generation uint64
}

// New returns an empty cache whose entries live for ttl on clk (DefaultTTL
// when ttl <= 0).
func New(clk clock.PassiveClock, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Cache{clock: clk, ttl: ttl, until: map[cloudprovider.OfferingKey]time.Time{}}
}

// TTL is how long an entry lives.
func (c *Cache) TTL() time.Duration { return c.ttl }

// MarkUnavailable records the offerings as refused now; an offering already
// present has its expiry pushed back.
func (c *Cache) MarkUnavailable(keys ...cloudprovider.OfferingKey) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	until := c.clock.Now().Add(c.ttl)
	for _, k := range keys {
		c.until[k] = until
	}
	c.generation++
}

// IsUnavailable reports whether the offering was refused less than TTL ago.
func (c *Cache) IsUnavailable(k cloudprovider.OfferingKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.until[k]
	return ok && c.clock.Now().Before(until)
}

// Entry is one unavailable offering and when it becomes available again.
type Entry struct {
	Offering cloudprovider.OfferingKey
	Until    time.Time
}

// List returns the unavailable offerings sorted by offering name.
func (c *Cache) List() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	out := make([]Entry, 0, len(c.until))
	for k, u := range c.until {
		out = append(out, Entry{Offering: k, Until: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Offering.String() < out[j].Offering.String() })
	return out
}

// Generation returns a number that changes whenever the set changes
// (including when an entry expires, as observed by this call).
func (c *Cache) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.generation
}

// Len returns the number of unavailable offerings.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return len(c.until)
}

func (c *Cache) expireLocked() {
	now := c.clock.Now()
	expired := false
	for k, u := range c.until {
		if !now.Before(u) {
			delete(c.until, k)
			expired = true
		}
	}
	if expired {
		c.generation++
	}
}
