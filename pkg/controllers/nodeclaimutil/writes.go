package nodeclaimutil

import (
	"context"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// Writes remembers a controller's own writes of NodeClaims until its
// cache shows them, so that the controller can list NodeClaims from the
// cache and still read its own writes: List waits (briefly) for the cache
// to show every write made so far, and reads the API server only if it
// does not. At fleet size a NodeClaim list from the API server is some
// 6 kB of JSON per NodeClaim (17 MB at 3,000), decoded again on every
// pass; the cache has them decoded already.
//
// Only writes made through Client are remembered: a controller whose
// reads must see another controller's writes at once still needs the API
// server.
type Writes struct {
	mu      sync.Mutex
	seq     uint64
	pending map[string]write // by NodeClaim name
	// watching: Watch registered an event handler, so List can wait for
	// the cache's events; changed is closed (and replaced) on each.
	watching bool
	changed  chan struct{}
}

type write struct {
	seq     uint64
	uid     types.UID
	rv      string // after the write; "" for a delete
	deleted bool
}

// NewWrites returns an empty record.
func NewWrites() *Writes { return &Writes{pending: map[string]write{}, changed: make(chan struct{})} }

// Watch lets List wait for the cache: a handler on the NodeClaim informer
// wakes List on every event the cache applies. Without it, List reads
// the API server whenever the cache has not caught up already.
func (w *Writes) Watch(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &karpv1.NodeClaim{})
	if err != nil {
		return err
	}
	wake := func(any) { w.observe() }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    wake,
		UpdateFunc: func(_, n any) { w.observe() },
		DeleteFunc: wake,
	}); err != nil {
		return err
	}
	w.mu.Lock()
	w.watching = true
	w.mu.Unlock()
	return nil
}

// observe wakes every List waiting for the cache.
func (w *Writes) observe() {
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// Client returns c with its NodeClaim writes (create, update, patch,
// delete, and the status of each) recorded.
func (w *Writes) Client(c client.Client) client.Client { return &writesClient{Client: c, w: w} }

func (w *Writes) record(obj client.Object, deleted bool) {
	if _, ok := obj.(*karpv1.NodeClaim); !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	wr := write{seq: w.seq, uid: obj.GetUID(), deleted: deleted}
	if !deleted {
		wr.rv = obj.GetResourceVersion()
	}
	w.pending[obj.GetName()] = wr
}

// Pending is how many writes the cache has not been seen to show yet.
func (w *Writes) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// List fills list with every NodeClaim: from cache once it shows every
// write recorded so far (checked again on each of the cache's NodeClaim
// events, for up to wait, once Watch is registered), otherwise from api.
// It reports whether api was read. opts go to either list
// (client.UnsafeDisableDeepCopy: the cache's own objects, read-only).
func (w *Writes) List(ctx context.Context, cache, api client.Reader, list *karpv1.NodeClaimList, wait time.Duration, opts ...client.ListOption) (fromAPI bool, err error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
wait:
	for {
		// Taken before the check, so an event between the check and the
		// wait still wakes it.
		w.mu.Lock()
		changed, watching := w.changed, w.watching
		w.mu.Unlock()
		caught, err := w.caughtUp(ctx, cache)
		if err != nil {
			return false, err
		}
		if caught {
			return false, cache.List(ctx, list, opts...)
		}
		if !watching {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-timer.C:
			break wait
		case <-changed:
		}
	}
	w.mu.Lock()
	upTo := w.seq
	w.mu.Unlock()
	if err := api.List(ctx, list, opts...); err != nil {
		return true, err
	}
	// The list shows every write made before it began.
	w.mu.Lock()
	for name, wr := range w.pending {
		if wr.seq <= upTo {
			delete(w.pending, name)
		}
	}
	w.mu.Unlock()
	return true, nil
}

// caughtUp drops the writes cache shows and reports whether none is left.
func (w *Writes) caughtUp(ctx context.Context, cache client.Reader) (bool, error) {
	w.mu.Lock()
	names := make(map[string]write, len(w.pending))
	for n, wr := range w.pending {
		names[n] = wr
	}
	w.mu.Unlock()
	left := 0
	for name, wr := range names {
		var nc karpv1.NodeClaim
		err := cache.Get(ctx, client.ObjectKey{Name: name}, &nc)
		switch {
		case apierrors.IsNotFound(err):
			if !wr.deleted {
				left++ // created or written, not in the cache yet
				continue
			}
		case err != nil:
			return false, err
		case !shows(&nc, wr):
			left++
			continue
		}
		w.mu.Lock()
		if cur, ok := w.pending[name]; ok && cur.seq == wr.seq {
			delete(w.pending, name)
		}
		w.mu.Unlock()
	}
	return left == 0, nil
}

// shows reports whether the cached NodeClaim reflects the write: another
// object of that name (the written one is gone), the resource version
// the write returned or a later one, or, for a delete, its deletion.
func shows(cached *karpv1.NodeClaim, wr write) bool {
	if wr.uid != "" && cached.UID != wr.uid {
		return true
	}
	if wr.deleted {
		return !cached.DeletionTimestamp.IsZero()
	}
	if cached.ResourceVersion == wr.rv {
		return true
	}
	// Resource versions are opaque; the API server's are etcd revisions,
	// and a later one is larger. Anything else waits for the API list.
	a, err1 := strconv.ParseUint(cached.ResourceVersion, 10, 64)
	b, err2 := strconv.ParseUint(wr.rv, 10, 64)
	return err1 == nil && err2 == nil && a >= b
}

type writesClient struct {
	client.Client
	w *Writes
}

func (c *writesClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	if err == nil {
		c.w.record(obj, false)
	}
	return err
}

func (c *writesClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	if err == nil {
		c.w.record(obj, false)
	}
	return err
}

func (c *writesClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := c.Client.Patch(ctx, obj, patch, opts...)
	if err == nil {
		c.w.record(obj, false)
	}
	return err
}

func (c *writesClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	if err == nil {
		c.w.record(obj, true)
	}
	return err
}

func (c *writesClient) Status() client.SubResourceWriter {
	return &writesStatus{SubResourceWriter: c.Client.Status(), w: c.w}
}

type writesStatus struct {
	client.SubResourceWriter
	w *Writes
}

func (s *writesStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceWriter.Update(ctx, obj, opts...)
	if err == nil {
		s.w.record(obj, false)
	}
	return err
}

func (s *writesStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil {
		s.w.record(obj, false)
	}
	return err
}
