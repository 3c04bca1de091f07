package nodeclaimutil_test

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// lagging is a cache that, for the names in stale, answers with what it
// held when they were frozen (or nothing): a cache behind the API server.
type lagging struct {
	client.Reader
	mu    sync.Mutex
	stale map[string]*karpv1.NodeClaim // nil: not there yet
}

func (l *lagging) freeze(name string, nc *karpv1.NodeClaim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale[name] = nc
}

func (l *lagging) thaw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.stale)
}

func (l *lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.mu.Lock()
	old, ok := l.stale[key.Name]
	l.mu.Unlock()
	if ok {
		if old == nil {
			return apierrors.NewNotFound(karpv1.GroupVersion.WithResource("nodeclaims").GroupResource(), key.Name)
		}
		old.DeepCopyInto(obj.(*karpv1.NodeClaim))
		return nil
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}

func names(l *karpv1.NodeClaimList) map[string]*karpv1.NodeClaim {
	out := map[string]*karpv1.NodeClaim{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out
}

func claim(name string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: karpv1.NodeClaimSpec{
		NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}}},
	}}
}

// TestWritesAreReadBackFromTheCacheOrTheAPIServer: a NodeClaim list shows
// every create, patch and delete made through Writes.Client: from the
// cache once it shows them, from the API server while it does not.
func TestWritesAreReadBackFromTheCacheOrTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api, err := client.New(cp.RESTConfig(), client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cp.RESTConfig(), cache.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if _, err := c.GetInformer(ctx, &karpv1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache not synced")
	}
	// Without Watch, List cannot wait for the cache's events: a write the
	// cache does not show is read from the API server at once (an hour's
	// wait would hang the test).
	unwatched := nodeclaimutil.NewWrites()
	early := claim("writes-unwatched")
	if err := unwatched.Client(api).Create(ctx, early); err != nil {
		t.Fatal(err)
	}
	var l0 karpv1.NodeClaimList
	frozen := &lagging{Reader: c, stale: map[string]*karpv1.NodeClaim{early.Name: nil}}
	if fromAPI, err := unwatched.List(ctx, frozen, api, &l0, time.Hour); err != nil || !fromAPI || names(&l0)[early.Name] == nil {
		t.Fatalf("unwatched List: fromAPI %v, err %v, listed %v; want the API server's list at once", fromAPI, err, names(&l0)[early.Name] != nil)
	}
	if err := api.Delete(ctx, early); err != nil {
		t.Fatal(err)
	}

	w := nodeclaimutil.NewWrites()
	if err := w.Watch(ctx, c); err != nil {
		t.Fatal(err)
	}
	kube := w.Client(api)
	lag := &lagging{Reader: c, stale: map[string]*karpv1.NodeClaim{}}
	list := func(wait time.Duration) (map[string]*karpv1.NodeClaim, bool) {
		t.Helper()
		var l karpv1.NodeClaimList
		fromAPI, err := w.List(ctx, lag, api, &l, wait)
		if err != nil {
			t.Fatal(err)
		}
		return names(&l), fromAPI
	}

	// A create the cache has not seen: read from the API server.
	a := claim("writes-a")
	lag.freeze(a.Name, nil)
	if err := kube.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if w.Pending() != 1 {
		t.Fatalf("%d writes pending after a create, want 1", w.Pending())
	}
	got, fromAPI := list(100 * time.Millisecond)
	if !fromAPI || got[a.Name] == nil {
		t.Fatalf("create unseen by the cache: fromAPI %v, listed %v; want the API server's list with %s", fromAPI, len(got), a.Name)
	}
	if w.Pending() != 0 {
		t.Fatalf("%d writes pending after the API list, want 0", w.Pending())
	}

	// A create the cache shows: read from the cache.
	lag.thaw()
	b := claim("writes-b")
	if err := kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, fromAPI = list(30 * time.Second)
	if fromAPI || got[b.Name] == nil || got[a.Name] == nil {
		t.Fatalf("create seen by the cache: fromAPI %v, a %v, b %v; want the cache's list with both", fromAPI, got[a.Name] != nil, got[b.Name] != nil)
	}

	// A patch: the cache's old version is not enough; the new one is.
	var old karpv1.NodeClaim
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), &old); err != nil {
		t.Fatal(err)
	}
	lag.freeze(b.Name, old.DeepCopy())
	base := b.DeepCopy()
	b.Annotations = map[string]string{"dovetail.sh/test": "patched"}
	if err := nodeclaimutil.Patch(ctx, kube, b, base); err != nil {
		t.Fatal(err)
	}
	got, fromAPI = list(100 * time.Millisecond)
	if !fromAPI || got[b.Name].Annotations["dovetail.sh/test"] != "patched" {
		t.Fatalf("patch unseen by the cache: fromAPI %v, annotation %q; want the API server's list with the patch", fromAPI, got[b.Name].Annotations["dovetail.sh/test"])
	}
	lag.thaw()
	base = b.DeepCopy()
	b.Annotations["dovetail.sh/test"] = "again"
	if err := nodeclaimutil.Patch(ctx, kube, b, base); err != nil {
		t.Fatal(err)
	}
	got, fromAPI = list(30 * time.Second)
	if fromAPI || got[b.Name].Annotations["dovetail.sh/test"] != "again" {
		t.Fatalf("patch seen by the cache: fromAPI %v, annotation %q; want the cache's list with the patch", fromAPI, got[b.Name].Annotations["dovetail.sh/test"])
	}

	// A delete: gone from the list either way.
	var before karpv1.NodeClaim
	if err := c.Get(ctx, client.ObjectKeyFromObject(a), &before); err != nil {
		t.Fatal(err)
	}
	lag.freeze(a.Name, before.DeepCopy())
	if err := kube.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, fromAPI = list(100 * time.Millisecond)
	if !fromAPI || got[a.Name] != nil {
		t.Fatalf("delete unseen by the cache: fromAPI %v, still listed %v", fromAPI, got[a.Name] != nil)
	}
	lag.thaw()
	if err := kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, fromAPI = list(30 * time.Second)
	if fromAPI || got[b.Name] != nil {
		t.Fatalf("delete seen by the cache: fromAPI %v, still listed %v", fromAPI, got[b.Name] != nil)
	}
}
