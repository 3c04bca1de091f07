// Package instance launches, describes and terminates EC2 instances for
// the AWS provider, batching each kind of call: identical CreateFleet
// requests that arrive within a short window become one request for more
// capacity, and DescribeInstances and TerminateInstances take many
// instance ids per call.
//
// # Launch
//
// A LaunchRequest is one instant fleet: capacity type, launch template
// configs with (instance type, subnet) overrides, and the tags for the
// fleet, its instances, volumes and network interfaces. Requests with
// equal content are combined: N callers become one CreateFleet with
// TotalTargetCapacity N, and each caller gets one of the instances (in the
// order EC2 listed them) together with the request's errors. Callers left
// without an instance get the errors only.
//
// Allocation strategies: price-capacity-optimized for spot, lowest-price
// for on-demand.
//
// # Errors
//
// *NotFoundError for an instance that does not exist (Describe, Terminate).
// A failed CreateFleet call is returned to every caller of the batch.
package instance
