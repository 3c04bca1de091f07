package offerings_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/offerings"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// TestPublishesTheCache: the ConfigMap is created with the cache's
// entries, rewritten when the cache changes, and readers drop entries
// past their time.
func TestPublishesTheCache(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ns := env.Namespace()
	ctx := context.Background()
	cache := unavailable.New(env.Clock, 3*time.Minute)
	c := offerings.NewController(env.Client, env.Client, cache, offerings.Options{Namespace: ns})
	read := func() []cloudprovider.OfferingKey {
		t.Helper()
		var cm corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: unavailable.PublishedConfigMap}, &cm); err != nil {
			t.Fatal(err)
		}
		keys, err := unavailable.Decode([]byte(cm.Data[unavailable.PublishedKey]), env.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	reconcile := func() {
		t.Helper()
		if res, err := c.Reconcile(ctx, singleton.Request(c.Name())); err != nil || res.RequeueAfter != offerings.DefaultInterval {
			t.Fatalf("reconcile: %v %+v", err, res)
		}
	}
	reconcile()
	if got := read(); len(got) != 0 {
		t.Fatalf("published %v from an empty cache", got)
	}
	k := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
	cache.MarkUnavailable(k)
	reconcile()
	if got := read(); len(got) != 1 || got[0] != k {
		t.Fatalf("published %v; want %v", got, k)
	}
	// Past the TTL the cache forgets it and the next write says so.
	env.Clock.Step(4 * time.Minute)
	reconcile()
	if got := read(); len(got) != 0 {
		t.Errorf("published %v after the TTL", got)
	}
}
