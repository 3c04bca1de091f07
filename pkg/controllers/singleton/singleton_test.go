package singleton_test

import (
	"context"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
)

func TestSourceEnqueuesTheOneRequestOnStart(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := singleton.Source("gc").Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 1 {
		t.Fatalf("queue holds %d requests, want 1", q.Len())
	}
	got, _ := q.Get()
	if got != singleton.Request("gc") || got.Name != "gc" {
		t.Fatalf("queued %v, want %v", got, singleton.Request("gc"))
	}
}
