// Package offeringmetrics is the controller behind the peer's offering
// gauges:
//
//   - karpenter_cloudprovider_instance_type_offering_available
//     {instance_type,capacity_type,zone}: 1 when the offering can be
//     launched now, 0 when not: the cloud reports it unavailable, or
//     dovetail holds it unavailable after a refusal for lack of capacity
//     (pkg/state/unavailable), as provisioning sees it;
//   - karpenter_cloudprovider_instance_type_offering_price_estimate
//     {instance_type,capacity_type,zone}: the hourly price in USD the
//     controller plans with.
//
// Every Interval (1 minute, as the peer) it asks the cloud provider for
// the instance types of every NodePool and sets one series per offering
// seen (an offering of several pools is available if it is in any). Series
// of offerings no pool has any more are dropped. A pool whose instance
// types cannot be read keeps the others' series current; the error is
// returned (logged, retried).
//
// A singleton (pkg/controllers/singleton); writes nothing to the cluster.
// The peer also reports a reserved-capacity series (0) per zone when its
// ReservedCapacity gate is on; dovetail does not offer reserved capacity
// yet (docs/controller.md), so there is none.
package offeringmetrics
