// Package instance launches, describes and terminates EC2 instances for
// the AWS provider, batching each kind of call: identical CreateFleet
// requests that arrive within a short window become one request for more
// capacity, and DescribeInstances and TerminateInstances take many
// instance ids per call.
//
// # Launch
//
// A LaunchRequest is one instance of an instant fleet: capacity type,
// launch template configs with (instance type, subnet) overrides, the
// tags for the fleet, its instances, volumes and network interfaces, and
// the caller's own tags and client token. Requests equal but for the
// caller's own parts are combined: N callers become one CreateFleet with
// TotalTargetCapacity N and a client token derived from theirs, every
// instance tagged with TagLaunchBatch; each caller gets one of the
// instances (in the order EC2 listed them, callers in the order of their
// tokens, so a repeat of the batch gives each the same instance) together
// with the fleet's errors, and its own tags on its instance by one
// CreateTags (a failure is a *TagError carrying the instance). Callers
// left without an instance get the errors only. InFlight tells which
// batches are launching or tagging in this process.
//
// Allocation strategies: price-capacity-optimized for spot, lowest-price
// for on-demand.
//
// # Records
//
// The provider remembers each instance it launched (Remember), described
// or listed, with when. Recent answers from that record while it is young
// enough and otherwise describes the instance together with every other
// stale record in one call: for questions that do not need the latest
// state (drift), calls grow with the fleet's age, not with how often it is
// asked. Terminate and a full List (Retain) forget instances that are gone.
//
// # Errors
//
// *NotFoundError for an instance that does not exist (Describe, Terminate).
// A failed CreateFleet call is returned to every caller of the batch.
package instance
