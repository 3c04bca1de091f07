package cloudprovider

import (
	"context"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// CloudProvider is the one interface between dovetail's controllers and a
// cloud. The AWS implementation (pkg/providers/aws) is the only one used in
// production; fake.CloudProvider is an in-memory implementation for tests of
// dovetail's own code.
//
// Every method is safe for concurrent use. Errors follow the contract given
// per method; match them with errors.As / the Is... helpers in errors.go,
// never by string.
type CloudProvider interface {
	// Create launches one instance for the NodeClaim, choosing among the
	// offerings its requirements allow (the cheapest available one, unless
	// the implementation documents otherwise). It returns a NodeClaim whose
	// labels name the chosen instance type, zone and capacity type and
	// whose status carries the providerID, imageID, capacity and
	// allocatable; the argument is not modified.
	//
	// Errors: *InsufficientCapacityError when no allowed offering had
	// capacity (the offerings tried are marked unavailable for a while, so
	// a retry gets what remains); *NodeClassNotReadyError when the
	// NodeClaim's node class cannot be resolved yet; *CreateError for other
	// launch failures, with a reason for the Launched condition.
	Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)

	// Delete terminates the NodeClaim's instance (found by providerID, or
	// by its NodeClaim tag when the providerID is not yet known). It
	// returns *NodeClaimNotFoundError once the instance is gone or
	// terminated, so callers can treat that as success; while termination
	// is in progress it returns nil and callers poll again.
	Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error

	// Get returns the NodeClaim view of the instance with this providerID,
	// or *NodeClaimNotFoundError when it does not exist or is terminated.
	// The view is named after the NodeClaim the instance was launched for
	// (the AWS provider's karpenter.sh/nodeclaim tag), "" when the provider
	// cannot tell: the lifecycle's fence trusts that name over any status.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)

	// List returns the NodeClaim view of every live instance this cluster
	// owns (by the cluster tag), including instances whose NodeClaim no
	// longer exists: garbage collection depends on that.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)

	// GetInstanceTypes returns every instance type the NodePool's node class
	// can launch, with capacity and overhead computed for the node class's
	// kubelet settings and offerings limited to its subnets' zones;
	// offerings known to lack capacity have Available false. Returns
	// *NodeClassNotReadyError while the node class is not resolved.
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*InstanceType, error)

	// IsDrifted reports why a launched NodeClaim no longer matches its node
	// class (image, subnet, security group, static fields), or "" when it
	// does not drift.
	IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (DriftReason, error)

	// RepairPolicies are the unhealthy node conditions the provider asks
	// to be repaired (acted on only under the NodeRepair feature gate),
	// each with how long it is tolerated; the same list every call.
	RepairPolicies() []RepairPolicy

	// Reboot reboots the NodeClaim's instance in place (a repair policy
	// with RepairReboot); it returns once the cloud accepted the request,
	// the reboot itself is seen through the Node's boot id. Errors:
	// *NodeClaimNotFoundError when the instance is gone.
	Reboot(ctx context.Context, nodeClaim *karpv1.NodeClaim) error

	// Name names the provider, e.g. "aws", for logs and metrics.
	Name() string
}

// DriftReason says why a NodeClaim drifted; "" means it did not.
type DriftReason string

// Drift reasons common to providers.
const (
	DriftImage         DriftReason = "ImageDrift"
	DriftSubnet        DriftReason = "SubnetDrift"
	DriftSecurityGroup DriftReason = "SecurityGroupDrift"
	DriftNodeClass     DriftReason = "NodeClassDrift"
)
