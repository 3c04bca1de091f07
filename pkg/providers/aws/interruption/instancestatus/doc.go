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
package instancestatus
