// Package status (nodeclass/status) keeps EC2NodeClass status current by
// calling the cloud provider's resolution logic, and guards deletion.
//
// The controller owns no AWS code: it calls a Resolver (the AWS provider's
// nodeclass.Resolver satisfies the interface) on every change and every
// refresh interval, and writes the returned status (subnets, security
// groups, AMIs, instance profile, and the SubnetsReady, SecurityGroupsReady,
// AMIsReady, InstanceProfileReady, ValidationSucceeded (with the dry-run
// launch checks unless disabled) and Ready conditions) when it differs.
// A resolver error (the cloud could not be asked) leaves the status as it
// was and is retried with backoff.
//
// # Deletion
//
// Every class gets the karpenter.k8s.aws/termination finalizer. A deleted
// class keeps it while any NodeClaim references the class (an event says
// so); then, if the resolver also implements Finalizer, its cloud
// resources are released, and the finalizer goes.
//
// With no resolver (cloud not wired), the controller is not registered;
// NodePools then wait with NodeClassReady=Unknown.
package status
