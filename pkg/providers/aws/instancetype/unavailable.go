package instancetype

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// UnavailableTTL is how long an offering stays unavailable after EC2
// reported insufficient capacity for it.
const UnavailableTTL = 3 * time.Minute

// Unavailable remembers offerings EC2 had no capacity for. It is safe for
// concurrent use.
type Unavailable struct {
	clock clock.PassiveClock
	ttl   time.Duration
	mu    sync.Mutex
	until map[cloudprovider.OfferingKey]time.Time
	seq   uint64
}

// NewUnavailable returns an empty cache with the given TTL (UnavailableTTL
// when 0).
func NewUnavailable(clk clock.PassiveClock, ttl time.Duration) *Unavailable {
	if ttl == 0 {
		ttl = UnavailableTTL
	}
	return &Unavailable{clock: clk, ttl: ttl, until: map[cloudprovider.OfferingKey]time.Time{}}
}

// Mark makes the offerings unavailable for the TTL from now.
func (u *Unavailable) Mark(keys ...cloudprovider.OfferingKey) {
	if len(keys) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	until := u.clock.Now().Add(u.ttl)
	for _, k := range keys {
		u.until[k] = until
	}
	u.seq++
}

// IsUnavailable reports whether the offering is marked and not expired.
func (u *Unavailable) IsUnavailable(k cloudprovider.OfferingKey) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.until[k]
	if !ok {
		return false
	}
	if !u.clock.Now().Before(t) {
		delete(u.until, k)
		u.seq++
		return false
	}
	return true
}

// State returns a number that changes whenever the set of unavailable
// offerings may have changed (marks, or expiries as of now), for caches.
func (u *Unavailable) State() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for k, t := range u.until {
		if !now.Before(t) {
			delete(u.until, k)
			u.seq++
		}
	}
	return u.seq
}
