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
