// Package controllers wires dovetail's controllers: NewControllers lists
// every one of them with its dependencies, in one function, so that what
// runs (and with what) is visible in one place.
//
// # The controllers
//
//	nodepool/hash                 template hash annotations on NodePools
//	nodepool/readiness            ValidationSucceeded, NodeClassReady, Ready
//	nodepool/counter              status.resources / status.nodes, pool metrics
//	provisioning                  unschedulable pods -> NodeClaims
//	nodeclaim/lifecycle           launch, registration, initialization, liveness
//	nodeclaim/drift               the Drifted condition
//	nodeclaim/podevents           status.lastPodEventTime, the Consolidatable condition
//	nodeclaim/expiration          deletes NodeClaims older than spec.expireAfter
//	disruption                    executes the disruption planner: consolidation, drift replacement
//	nodeclaim/termination         deadline, Node deletion, instance deletion
//	node/termination              taint, ordered drain, volumes, instance
//	nodeclaim/garbagecollection   leaked instances, vanished instances, orphan nodes
//	nodeclass/status              EC2NodeClass status (when a resolver is given)
//
// Each controller is a small package with an injected client, clock, cloud
// provider, event recorder and metrics; Name and Register; requeues computed
// from the clock, never sleeps. Shared helpers live in nodeclaimutil
// (indexes, lookups, patch helpers) and singleton (periodic sweeps);
// controllerstest runs controllers against a real control plane with the
// fake cloud and a simulated kubelet.
//
// # Vocabulary
//
//   - Deps: what every controller shares (client, cloud, clock, recorder,
//     metrics registry, unavailable-offerings cache).
//   - Config: the tunables, already resolved by the operator (timeouts
//     scaled for local mode, defaults applied).
//
// # Invariants
//
// The cloud provider given in Deps is decorated once per controller with
// metrics.Decorate, so karpenter_cloudprovider_* carry the calling
// controller's name. Cache indexes (nodeclaimutil.RegisterIndexes) must be
// registered on the manager before the controllers; pkg/operator does both.
// See ExampleNewControllers.
package controllers
