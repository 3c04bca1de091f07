package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

// staticCrashLimit is the static pool's limits.nodes in TestStaticPoolCrash.
const staticCrashLimit = 10

// TestStaticPoolCrash kills the controller (SIGKILL) while a static
// NodePool scales from 3 to 10 and again while it scales from 10 to 3.
// At every poll the pool never holds more NodeClaims than its
// limits.nodes; after each restart the count converges to spec.replicas
// and every instance has its NodeClaim (none leaked, none lost).
func TestStaticPoolCrash(t *testing.T) {
	s := newScenario(t)
	if err := ctrl.Reconfigure(t.Context(), func(c *ctrlproc.Component) {
		if c.Env == nil {
			c.Env = map[string]string{}
		}
		c.Env["FEATURE_GATES"] = "StaticCapacity=true"
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctrl.Reconfigure(context.Background(), func(c *ctrlproc.Component) { delete(c.Env, "FEATURE_GATES") }); err != nil {
			t.Error(err)
		}
	})
	const pool = "crashstatic"
	np := s.pool(pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{karpv1.CapacityTypeOnDemand}
		np.Spec.Replicas = ptr.To(int64(3))
		np.Spec.Limits = karpv1.Limits{"nodes": resource.MustParse(fmt.Sprint(staticCrashLimit))}
	})
	// count reads the pool's NodeClaims not being deleted, failing the
	// test the moment all of them (deleting included) exceed the limit.
	count := func() int {
		t.Helper()
		all := 0
		for _, nc := range nodeClaims(t) {
			if nc.Labels[karpv1.NodePoolLabelKey] == pool {
				all++
			}
		}
		if all > staticCrashLimit {
			t.Fatalf("%d NodeClaims in static pool %s, over its limits.nodes %d", all, pool, staticCrashLimit)
		}
		return len(poolClaims(t, pool))
	}
	converged := func(want int) {
		t.Helper()
		eventually(t, 4*time.Minute, fmt.Sprintf("static pool %s at %d ready NodeClaims, no instance leaked", pool, want), func() (bool, error) {
			claims := poolClaims(t, pool)
			if n := count(); n != want {
				return false, fmt.Errorf("%d NodeClaims, want %d", n, want)
			}
			for _, nc := range claims {
				if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
					return false, fmt.Errorf("NodeClaim %s not initialized", nc.Name)
				}
			}
			for _, nc := range nodeClaims(t) {
				if nc.Labels[karpv1.NodePoolLabelKey] == pool && nc.DeletionTimestamp != nil {
					return false, fmt.Errorf("NodeClaim %s still being deleted", nc.Name)
				}
			}
			return true, consistent(t)
		})
	}
	scale := func(n int64) {
		t.Helper()
		if err := kube.Get(s.ctx, client.ObjectKeyFromObject(np), np); err != nil {
			t.Fatal(err)
		}
		base := np.DeepCopy()
		np.Spec.Replicas = ptr.To(n)
		if err := kube.Patch(s.ctx, np, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	crash := func(what string) {
		t.Helper()
		if err := ctrl.Kill(0); err != nil {
			t.Fatal(err)
		}
		count() // the limit holds with the controller down too
		if err := ctrl.Restart(s.ctx, 0); err != nil {
			t.Fatalf("restart %s: %v", what, err)
		}
	}
	converged(3)

	// 3 -> 10: killed once the scale-up has begun (more NodeClaims than 3).
	scale(10)
	eventually(t, 2*time.Minute, "the scale-up begun", func() (bool, error) {
		if n := count(); n <= 3 {
			return false, fmt.Errorf("%d NodeClaims", n)
		}
		return true, nil
	})
	crash("during the scale-up")
	converged(10)

	// 10 -> 3: killed once the scale-down has begun (a NodeClaim deleting
	// or fewer than 10).
	scale(3)
	eventually(t, 2*time.Minute, "the scale-down begun", func() (bool, error) {
		deleting := 0
		for _, nc := range nodeClaims(t) {
			if nc.Labels[karpv1.NodePoolLabelKey] == pool && nc.DeletionTimestamp != nil {
				deleting++
			}
		}
		if n := count(); deleting == 0 && n >= 10 {
			return false, fmt.Errorf("%d NodeClaims, %d deleting", n, deleting)
		}
		return true, nil
	})
	crash("during the scale-down")
	converged(3)

}
