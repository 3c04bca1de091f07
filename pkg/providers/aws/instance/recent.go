package instance

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// recent remembers what the provider last learned about each instance
// (from its launch, a Describe or a List) and when, so that questions that
// do not need the latest state (drift: the image, subnet and security
// groups an instance was launched with) cost no call per question.
type recent struct {
	mu      sync.Mutex
	byID    map[string]seen
	refresh sync.Mutex // one refresh at a time; the others find it done
}

type seen struct {
	in *Instance
	at time.Time
}

// maxRefresh caps the ids of one refresh (one DescribeInstances call).
const maxRefresh = 500

func (r *recent) put(in *Instance, at time.Time) {
	if in == nil || in.ID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]seen{}
	}
	if old, ok := r.byID[in.ID]; !ok || !old.at.After(at) {
		r.byID[in.ID] = seen{in: in, at: at}
	}
}

func (r *recent) drop(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byID, id)
}

// fresh returns the entry if it was learned after since.
func (r *recent) fresh(id string, since time.Time) (*Instance, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.byID[id]
	if !ok || s.at.Before(since) {
		return nil, false
	}
	return s.in, true
}

// stale lists up to n ids learned before since, oldest first.
func (r *recent) stale(since time.Time, n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, s := range r.byID {
		if s.at.Before(since) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return r.byID[a].at.Compare(r.byID[b].at) })
	return ids[:min(n, len(ids))]
}

// retain drops the entries learned before since whose ids are not in live.
func (r *recent) retain(live map[string]*Instance, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.byID, func(id string, s seen) bool { return live[id] == nil && s.at.Before(since) })
}

func (r *recent) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Remember records an instance as the caller launched it (its image and
// security groups are the launch template's), so that Recent needs no call
// for it while the record is young enough.
func (p *Provider) Remember(in *Instance) {
	c := *in
	c.Tags = maps.Clone(in.Tags)
	c.SecurityGroupIDs = slices.Clone(in.SecurityGroupIDs)
	p.recent.put(&c, p.clock.Now())
}

// Recent returns the instance as learned at most maxAge ago: from its
// launch, a Get or a List, or else from one DescribeInstances call that
// also refreshes every other instance learned more than maxAge/2 ago (up
// to 500 ids), so that a fleet's records are refreshed together, about one
// call per maxAge/2 however often they are asked for. Its State may be
// that old too: callers that need the current state use Get.
func (p *Provider) Recent(ctx context.Context, id string, maxAge time.Duration) (*Instance, error) {
	if in, ok := p.recent.fresh(id, p.clock.Now().Add(-maxAge)); ok {
		return in, nil
	}
	p.recent.refresh.Lock()
	defer p.recent.refresh.Unlock()
	now := p.clock.Now()
	if in, ok := p.recent.fresh(id, now.Add(-maxAge)); ok {
		return in, nil // refreshed by the caller before us
	}
	ids := append([]string{id}, p.recent.stale(now.Add(-maxAge/2), maxRefresh-1)...)
	found, err := p.List(ctx, []ec2types.Filter{{Name: aws.String("instance-id"), Values: unique(ids)}})
	if err != nil {
		return nil, err
	}
	for _, old := range ids {
		if found[old] == nil {
			p.recent.drop(old)
		}
	}
	in, ok := found[id]
	if !ok {
		return nil, &NotFoundError{ID: id}
	}
	return in, nil
}

// Remembered is how many instances Recent holds records of.
func (p *Provider) Remembered() int { return p.recent.len() }
