package nodeoverlay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/api/crds"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeoverlay"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
)

// With the gate off, an overlay gets Ready=False/FeatureGateOff for its
// generation, and again after a change of its spec.
func TestOverlayMarkedGateOff(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(nodeoverlay.NewController(env.Manager.GetClient(), env.Clock, nodeoverlay.Options{}))
	no := &karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "discount"},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements:    []karpv1alpha1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"arm64"}}},
			PriceAdjustment: ptr.To("-10%"),
		},
	}
	env.Create(no)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), no) })
	marked := func(what string) {
		t.Helper()
		env.Eventually(what, func() (bool, error) {
			if err := env.Get(no); err != nil {
				return false, err
			}
			c := no.GetCondition(karpv1alpha1.ConditionTypeReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == nodeoverlay.ReasonGateOff &&
				c.Message == nodeoverlay.Message && c.ObservedGeneration == no.Generation, nil
		})
	}
	marked("Ready=False/FeatureGateOff")

	env.Eventually("the weight changed", func() (bool, error) {
		if err := env.Get(no); err != nil {
			return false, err
		}
		no.Spec.Weight = ptr.To[int32](50)
		return env.Client.Update(env.Context(), no) == nil, nil
	})
	marked("Ready=False/FeatureGateOff for the new generation")
}

// Without the NodeOverlay CRD, Register adds nothing and does not fail, so
// the controller starts on a cluster that never installed it.
func TestRegisterWithoutTheCRD(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	objs, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var overlayCRD *apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o.Spec.Names.Kind == "NodeOverlay" {
			overlayCRD = o
		}
	}
	if overlayCRD == nil {
		t.Fatal("api/crds has no NodeOverlay CRD")
	}
	ext := apiextensionsClient(t)
	if err := ext.Delete(env.Context(), overlayCRD.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := controlplane.InstallCRDs(context.Background(), cp.RESTConfig(), []*apiextensionsv1.CustomResourceDefinition{overlayCRD}); err != nil {
			t.Errorf("reinstalling the NodeOverlay CRD: %v", err)
		}
	})
	env.Eventually("the NodeOverlay CRD gone", func() (bool, error) {
		err := ext.Get(env.Context(), client.ObjectKeyFromObject(overlayCRD), &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	// A fresh manager: its REST mapper has not seen NodeOverlays and
	// answers "no match", the case Register must take in its stride.
	fresh := controllerstest.New(t, cp.RESTConfig())
	gvk := karpv1alpha1.GroupVersion.WithKind("NodeOverlay")
	if _, err := fresh.Manager.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); !meta.IsNoMatchError(err) {
		t.Fatalf("the REST mapper without the CRD answers %v, want a no-match error", err)
	}
	c := nodeoverlay.NewController(fresh.Manager.GetClient(), fresh.Clock, nodeoverlay.Options{Enabled: true, Cloud: fresh.Cloud})
	if err := c.Register(fresh.Context(), fresh.Manager); err != nil {
		t.Fatalf("Register without the CRD: %v", err)
	}
}

// With the gate on: two overlays of equal weight that price the same
// offerings conflict, the one taken second (the earlier name) is reported
// with the other's name and the field; when the other goes, it applies.
// An overlay matching nothing is valid.
func TestOverlayConflictReported(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Create(controllerstest.NodePool("general"))
	env.Start(nodeoverlay.NewController(env.Manager.GetClient(), env.Clock, nodeoverlay.Options{Enabled: true, Cloud: env.Cloud}))
	c5 := []karpv1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"c5"}}}
	mk := func(name string, reqs []karpv1alpha1.NodeSelectorRequirement, adj string) *karpv1alpha1.NodeOverlay {
		no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: karpv1alpha1.NodeOverlaySpec{Requirements: reqs, PriceAdjustment: ptr.To(adj), Weight: ptr.To[int32](10)}}
		env.Create(no)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), no) })
		return no
	}
	alpha := mk("alpha", c5, "-10%")
	beta := mk("beta", c5, "-20%")
	none := mk("none", []karpv1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"x9"}}}, "-20%")
	ready := func(no *karpv1alpha1.NodeOverlay, status metav1.ConditionStatus, reason string, msg ...string) {
		t.Helper()
		env.Eventually(no.Name+" Ready="+string(status)+"/"+reason, func() (bool, error) {
			if err := env.Get(no); err != nil {
				return false, err
			}
			c := no.GetCondition(karpv1alpha1.ConditionTypeReady)
			v := no.GetCondition(nodeoverlay.ConditionTypeValidationSucceeded)
			if c == nil || v == nil || c.Status != status || c.Reason != reason || v.Status != status {
				return false, nil
			}
			for _, m := range msg {
				if !strings.Contains(c.Message, m) {
					return false, fmt.Errorf("message %q lacks %q", c.Message, m)
				}
			}
			return true, nil
		})
	}
	ready(beta, metav1.ConditionTrue, nodeoverlay.ReasonApplied)
	ready(alpha, metav1.ConditionFalse, overlay.ReasonConflict, `"beta"`, "spec.priceAdjustment")
	ready(none, metav1.ConditionTrue, nodeoverlay.ReasonApplied, "applied to 0 instance type")
	env.Delete(beta)
	ready(alpha, metav1.ConditionTrue, nodeoverlay.ReasonApplied)
}

func apiextensionsClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
