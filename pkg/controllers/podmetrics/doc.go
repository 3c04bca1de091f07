// Package podmetrics is the controller behind the peer's pod metrics:
//
//   - karpenter_pods_state: 1 per pod, labelled with its name, namespace,
//     owner (the first owner reference as an API path,
//     /apis/<apiVersion>/namespaces/<namespace>/<kind>s/<name>), node,
//     whether it is scheduled (bound), the node's NodePool, zone,
//     architecture, capacity type and instance type, the pod's phase,
//     whether it is ready, and whether its node is managed (has a
//     NodePool). The series are made when /metrics is scraped, from the
//     Pod and Node informer stores, so nothing is kept per pod between
//     scrapes (metrics.ScrapeGauge).
//   - karpenter_pods_startup_duration_seconds: for each pod this process
//     saw Pending, the time from its creation to its Ready condition
//     turning True (the condition's lastTransitionTime), observed once.
//     A pod that ends (Succeeded, Failed) or is deleted before it is
//     ready is not observed.
//
// It reads the cache's trimmed Pods (pkg/operator/cachetrim keeps the
// Ready condition's status and transition time for this). The only state
// it keeps is the set of pods seen Pending and not yet ready, in memory: a
// restart forgets it, so pods that became ready while no controller ran
// are not observed (the peer does the same).
//
// It writes nothing to the cluster and runs on every replica (its
// handlers are on the shared informers; it has no reconciler and is not
// leader-elected), so every replica's /metrics serves the same series.
package podmetrics
