package metrics

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// Values of the error label of karpenter_cloudprovider_errors_total.
const (
	ErrorInsufficientCapacity = "InsufficientCapacityError"
	ErrorNodeClaimNotFound    = "NodeClaimNotFoundError"
	ErrorNodeClassNotReady    = "NodeClassNotReadyError"
	ErrorCreate               = "CreateError"
	ErrorContext              = "ContextError"
	ErrorUnknown              = "UnknownError"
)

// ErrorType names the typed error err is or wraps, for the error label.
func ErrorType(err error) string {
	var create *cloudprovider.CreateError
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		return ErrorInsufficientCapacity
	case cloudprovider.IsNodeClaimNotFound(err):
		return ErrorNodeClaimNotFound
	case cloudprovider.IsNodeClassNotReady(err):
		return ErrorNodeClassNotReady
	case errors.As(err, &create):
		return ErrorCreate
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrorContext
	default:
		return ErrorUnknown
	}
}

// CloudProvider decorates a cloudprovider.CloudProvider with call metrics:
// karpenter_cloudprovider_duration_seconds, karpenter_cloudprovider_errors_total
// (also labelled with the NodePool of the NodeClaim or NodePool the call is
// about) and dovetail_cloudprovider_calls_total, all labelled with the
// calling controller. It passes results and errors through unchanged.
type CloudProvider struct {
	inner      cloudprovider.CloudProvider
	reg        *Registry
	controller string
	clock      clock.PassiveClock
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// Decorate wraps inner so that calls are recorded in reg under the given
// controller name. clk times the calls (a fake clock in tests).
func Decorate(inner cloudprovider.CloudProvider, reg *Registry, controller string, clk clock.PassiveClock) *CloudProvider {
	return &CloudProvider{inner: inner, reg: reg, controller: controller, clock: clk}
}

// Unwrap returns the decorated provider.
func (c *CloudProvider) Unwrap() cloudprovider.CloudProvider { return c.inner }

// observe records a call; nodePool labels its error ("" for calls about
// no NodePool: Get, List).
func (c *CloudProvider) observe(method, nodePool string, start time.Time, err error) {
	provider := c.inner.Name()
	c.reg.CloudProviderDuration.WithLabelValues(c.controller, method, provider).Observe(c.clock.Since(start).Seconds())
	outcome := "success"
	if err != nil {
		outcome = "error"
		c.reg.CloudProviderErrors.WithLabelValues(c.controller, method, provider, ErrorType(err), nodePool).Inc()
	}
	c.reg.CloudProviderCalls.WithLabelValues(c.controller, method, provider, outcome).Inc()
}

// Create records and forwards.
func (c *CloudProvider) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	start := c.clock.Now()
	out, err := c.inner.Create(ctx, nc)
	c.observe("Create", poolOf(nc), start, err)
	return out, err
}

// Delete records and forwards. A NodeClaimNotFoundError is how Delete says
// "done", so it is not counted as an error.
func (c *CloudProvider) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	start := c.clock.Now()
	err := c.inner.Delete(ctx, nc)
	c.observe("Delete", poolOf(nc), start, cloudprovider.IgnoreNodeClaimNotFound(err))
	return err
}

// Get records and forwards.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	start := c.clock.Now()
	out, err := c.inner.Get(ctx, providerID)
	c.observe("Get", "", start, err)
	return out, err
}

// List records and forwards.
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	start := c.clock.Now()
	out, err := c.inner.List(ctx)
	c.observe("List", "", start, err)
	return out, err
}

// GetInstanceTypes records and forwards.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	start := c.clock.Now()
	out, err := c.inner.GetInstanceTypes(ctx, np)
	c.observe("GetInstanceTypes", np.Name, start, err)
	return out, err
}

// IsDrifted records and forwards.
func (c *CloudProvider) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	start := c.clock.Now()
	out, err := c.inner.IsDrifted(ctx, nc)
	c.observe("IsDrifted", poolOf(nc), start, err)
	return out, err
}

// Reboot records and forwards.
func (c *CloudProvider) Reboot(ctx context.Context, nc *karpv1.NodeClaim) error {
	start := c.clock.Now()
	err := c.inner.Reboot(ctx, nc)
	c.observe("Reboot", poolOf(nc), start, err)
	return err
}

// RepairPolicies forwards (a fixed list: nothing to observe).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return c.inner.RepairPolicies()
}

// Name is the decorated provider's name.
func (c *CloudProvider) Name() string { return c.inner.Name() }

// poolOf is the NodePool a NodeClaim was made from ("" when none).
func poolOf(nc *karpv1.NodeClaim) string { return nc.Labels[karpv1.NodePoolLabelKey] }
