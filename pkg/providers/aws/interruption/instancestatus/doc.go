// Package instancestatus reads the changes EC2 has scheduled for running
// instances (DescribeInstanceStatus events: instance-retirement,
// instance-stop, instance-reboot, system-reboot) and reports them as
// provider-neutral scheduled-change events (cloudprovider.ScheduledEvents),
// which the interruption controller polls. It only talks to EC2; what to
// do about an event is the controller's.
//
// One poll is one paginated DescribeInstanceStatus call filtered by
// event.code, so an account without scheduled events costs one request
// with an empty answer. Events EC2 reports as done ("[Completed]") or
// called off ("[Canceled]") are left out. system-maintenance events (the
// instance keeps running) and failed status checks are not reported.
//
// Capacity Blocks: each poll also lists the account's active capacity
// reservations (DescribeCapacityReservations, state active); a block
// within 40 minutes of its end (EC2 warns then and starts terminating its
// instances 10 minutes later) is reported as one scheduled change of its
// pending and running instances (DescribeInstances by
// capacity-reservation-id), id capacity-block-expiration/CR-ID, state
// capacity-block-expiring, NotBefore the start of EC2's reclaim.
package instancestatus
