package termination

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Taint and Release are the controller's node writes, for tests.
func Taint(ctx context.Context, c *Controller, node *corev1.Node) error { return c.taint(ctx, node) }
func Release(ctx context.Context, c *Controller, node *corev1.Node) error {
	return c.release(ctx, node)
}
