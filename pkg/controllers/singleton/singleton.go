// Package singleton runs a reconciler that has no object of its own (a
// periodic sweep such as garbage collection) on a controller-runtime
// controller: Source puts one request into the queue when the controller
// starts, and the reconciler keeps itself alive by returning RequeueAfter.
//
// Running on a controller (rather than a goroutine with a ticker) gives the
// sweep leader election, the workqueue's error backoff, and the
// controller_runtime_* metrics. Callers compute RequeueAfter from their
// injected clock; nothing here sleeps.
//
//	builder.ControllerManagedBy(mgr).Named("gc").
//		WatchesRawSource(singleton.Source("gc")).
//		Complete(reconciler)
package singleton

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Request is the one request a singleton controller reconciles.
func Request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// Source enqueues Request(name) once, when the controller starts.
func Source(name string) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(Request(name))
		return nil
	})
}
