package drift_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/drift"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/hash"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
)

func TestDriftedCondition(t *testing.T) {
	tests := []struct {
		name string
		// change makes the NodeClaim drift (or not, when want is "").
		change func(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, nc *karpv1.NodeClaim)
		want   string
	}{
		{"nothing changed", func(*testing.T, *controllerstest.Env, *karpv1.NodePool, *karpv1.NodeClaim) {}, ""},
		{"template label changed", func(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, _ *karpv1.NodeClaim) {
			update(t, env, np, func() { np.Spec.Template.Labels = map[string]string{"team": "b"} })
		}, drift.ReasonNodePoolDrifted},
		{"weight changed", func(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, _ *karpv1.NodeClaim) {
			w := int32(42)
			update(t, env, np, func() { np.Spec.Weight = &w })
		}, ""},
		{"requirements exclude the capacity type", func(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, _ *karpv1.NodeClaim) {
			update(t, env, np, func() {
				np.Spec.Template.Spec.Requirements[1].Values = []string{karpv1.CapacityTypeSpot}
			})
		}, drift.ReasonRequirementsDrifted},
		{"requirements widened", func(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, _ *karpv1.NodeClaim) {
			update(t, env, np, func() {
				np.Spec.Template.Spec.Requirements[1].Values = []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}
			})
		}, ""},
		{"cloud reports a new image", func(_ *testing.T, env *controllerstest.Env, _ *karpv1.NodePool, nc *karpv1.NodeClaim) {
			env.Cloud.SetDrifted(nc.Status.ProviderID, cloudprovider.DriftImage)
		}, string(cloudprovider.DriftImage)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := controllerstest.New(t, cp.RESTConfig())
			kube := env.Manager.GetClient()
			d := drift.NewController(kube, env.Cloud, env.Clock, 0)
			env.Start(
				lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}),
				hash.NewController(kube), d,
			)
			np := controllerstest.NodePool("team-a")
			env.Create(np)
			env.Eventually("the pool's hash", func() (bool, error) {
				err := env.Get(np)
				return np.Annotations[karpv1.NodePoolHashAnnotationKey] != "", err
			})
			nc := controllerstest.NodeClaim("drift", np.Name)
			env.Create(nc)
			env.Eventually("launch", func() (bool, error) {
				err := env.Get(nc)
				return nc.IsTrue(karpv1.ConditionTypeLaunched), err
			})

			tt.change(t, env, np, nc)
			if tt.want == "" {
				// Cloud drift makes no event: check by hand, then look.
				reconcileNC(t, d, nc)
				controllerstest.Consistently(t, 500*time.Millisecond, "no drift", func() (bool, error) {
					err := env.Get(nc)
					return nc.GetCondition(karpv1.ConditionTypeDrifted) == nil, err
				})
				return
			}
			env.Eventually("Drifted="+tt.want, func() (bool, error) {
				reconcileNC(t, d, nc)
				if err := env.Get(nc); err != nil {
					return false, err
				}
				c := nc.GetCondition(karpv1.ConditionTypeDrifted)
				return c != nil && c.Status == metav1.ConditionTrue && c.Reason == tt.want, nil
			})
			// Drift is not Ready's business.
			if ready := nc.GetCondition(karpv1.ConditionTypeReady); ready != nil && ready.Reason == tt.want {
				t.Errorf("Ready took the drift reason: %+v", ready)
			}
		})
	}
}

func TestDriftClearsWhenThePoolIsRestoredAndOldHashVersionsAreRestamped(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	d := drift.NewController(kube, env.Cloud, env.Clock, 0)
	env.Start(
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}),
		hash.NewController(kube), d,
	)
	np := controllerstest.NodePool("team-a")
	env.Create(np)
	old := controllerstest.NodeClaim("old-scheme", np.Name)
	old.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "12345", karpv1.NodePoolHashVersionAnnotationKey: "v0"}
	env.Create(old)
	env.Eventually("the old NodeClaim to get the current hash, not drift", func() (bool, error) {
		if err := env.Get(old); err != nil || env.Get(np) != nil {
			return false, err
		}
		return old.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == nodepoolhash.Version &&
			old.Annotations[karpv1.NodePoolHashAnnotationKey] == np.Annotations[karpv1.NodePoolHashAnnotationKey] &&
			old.IsTrue(karpv1.ConditionTypeLaunched), nil
	})
	reconcileNC(t, d, old)
	if err := env.Get(old); err != nil {
		t.Fatal(err)
	}
	if c := old.GetCondition(karpv1.ConditionTypeDrifted); c != nil {
		t.Fatalf("restamped NodeClaim drifted: %+v", c)
	}

	update(t, env, np, func() { np.Spec.Template.Labels = map[string]string{"team": "b"} })
	env.Eventually("drift", func() (bool, error) {
		err := env.Get(old)
		return old.IsTrue(karpv1.ConditionTypeDrifted), err
	})
	update(t, env, np, func() { np.Spec.Template.Labels = nil })
	env.Eventually("drift to clear", func() (bool, error) {
		err := env.Get(old)
		return old.GetCondition(karpv1.ConditionTypeDrifted) == nil, err
	})
}

func update(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, mutate func()) {
	t.Helper()
	if err := env.Get(np); err != nil {
		t.Fatal(err)
	}
	base := np.DeepCopy()
	mutate()
	if err := env.Client.Patch(env.Context(), np, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

func reconcileNC(t *testing.T, d *drift.Controller, nc *karpv1.NodeClaim) {
	t.Helper()
	if _, err := d.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
		t.Fatal(err)
	}
}
