package provisioning_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeoverlay"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
)

// overlayFixture is the provisioner with the NodeOverlay gate on and the
// overlays' status controller, on the real API server and scheduler.
func overlayFixture(t *testing.T) *fixture {
	f := setup(t, provisioning.Options{NodeOverlays: true}, false, func(env *controllerstest.Env) controllerstest.Controller {
		return nodeoverlay.NewController(env.Manager.GetClient(), env.Clock, nodeoverlay.Options{Enabled: true, Cloud: env.Cloud})
	})
	f.readyPool(controllerstest.NodePool("general"))
	return f
}

// createOverlay creates the overlay (deleted when the test ends: overlays
// are cluster-scoped and the env does not clean them) and waits for its
// Ready condition to reach status with reason.
func (f *fixture) createOverlay(no *karpv1alpha1.NodeOverlay, status metav1.ConditionStatus, reason string) *metav1.Condition {
	f.t.Helper()
	f.env.Create(no)
	f.t.Cleanup(func() { _ = f.env.Client.Delete(context.Background(), no) })
	var ready *metav1.Condition
	f.env.Eventually("NodeOverlay "+no.Name+" Ready="+string(status)+"/"+reason, func() (bool, error) {
		if err := f.env.Get(no); err != nil {
			return false, err
		}
		ready = no.GetCondition(karpv1alpha1.ConditionTypeReady)
		v := no.GetCondition(nodeoverlay.ConditionTypeValidationSucceeded)
		return ready != nil && ready.Status == status && ready.Reason == reason && ready.ObservedGeneration == no.Generation &&
			v != nil && v.Status == status, nil
	})
	// The provisioner reads overlays from the manager's cache.
	f.env.Eventually("the cache to hold NodeOverlay "+no.Name, func() (bool, error) {
		return f.env.Manager.GetClient().Get(f.env.Context(), client.ObjectKeyFromObject(no), &karpv1alpha1.NodeOverlay{}) == nil, nil
	})
	return ready
}

func family(fam string) []karpv1alpha1.NodeSelectorRequirement {
	return []karpv1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{fam}}}
}

func plannedType(t *testing.T, nc *karpv1.NodeClaim) string {
	t.Helper()
	o := nc.Annotations[karpv1.AnnotationPlannedOffering]
	typ, _, ok := strings.Cut(o, "/")
	if !ok {
		t.Fatalf("NodeClaim %s has no planned offering (%q)", nc.Name, o)
	}
	return typ
}

// Without overlays a 1.5-cpu pod gets the cheapest type that holds it
// (m5.large, $0.096/h); an overlay of -90% on c5 makes the controller
// launch c5.xlarge ($0.017/h adjusted) instead, with the adjusted price
// recorded on the NodeClaim.
func TestOverlayChangesWhatIsLaunched(t *testing.T) {
	f := overlayFixture(t)
	no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "c5-discount"},
		Spec: karpv1alpha1.NodeOverlaySpec{Requirements: family("c5"), PriceAdjustment: ptr.To("-90%")}}
	ready := f.createOverlay(no, metav1.ConditionTrue, nodeoverlay.ReasonApplied)
	if !strings.Contains(ready.Message, "applied to 1 instance type") {
		t.Errorf("Ready message %q", ready.Message)
	}
	f.createPods(1, "web", "1500m", "1Gi", nil)
	res := f.provision()
	if len(res.Created) != 1 {
		t.Fatalf("created %d NodeClaims, want 1", len(res.Created))
	}
	nc := res.Created[0]
	if got := plannedType(t, nc); got != "c5.xlarge" {
		t.Fatalf("planned %s, want c5.xlarge (priced down by the overlay)", got)
	}
	if p := nc.Annotations[karpv1.AnnotationPricePerHour]; p != "" && !strings.HasPrefix(p, "0.017") {
		t.Errorf("price annotation %q, want the adjusted 0.017", p)
	}
}

// An overlay that adds an extended resource to one family lets pods that
// request it launch there, and only there.
func TestOverlayCapacityLaunchesTheFamily(t *testing.T) {
	f := overlayFixture(t)
	no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "c5-dongles"},
		Spec: karpv1alpha1.NodeOverlaySpec{Requirements: family("c5"), Capacity: corev1.ResourceList{"example.com/dongle": resource.MustParse("2")}}}
	f.createOverlay(no, metav1.ConditionTrue, nodeoverlay.ReasonApplied)
	f.createPods(1, "dongle", "500m", "1Gi", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["example.com/dongle"] = resource.MustParse("1")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/dongle": resource.MustParse("1")}
	})
	res := f.provision()
	if len(res.Created) != 1 {
		t.Fatalf("created %d NodeClaims, want 1 (skipped %v)", len(res.Created), res.Skipped)
	}
	r := requirement(res.Created[0], corev1.LabelInstanceTypeStable)
	if r == nil || len(r.Values) != 1 || r.Values[0] != "c5.xlarge" {
		t.Fatalf("instance-type requirement %+v, want only c5.xlarge", r)
	}
}

// An overlay whose adjustment would make a price negative is reported on
// its status, naming the field, and leaves the plan as it is without it.
func TestBadOverlayLeavesThePlan(t *testing.T) {
	f := overlayFixture(t)
	no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "c5-below-zero"},
		Spec: karpv1alpha1.NodeOverlaySpec{Requirements: family("c5"), PriceAdjustment: ptr.To("-1")}}
	ready := f.createOverlay(no, metav1.ConditionFalse, overlay.ReasonNegativePrice)
	if !strings.Contains(ready.Message, "spec.priceAdjustment") || !strings.Contains(ready.Message, "c5.xlarge") {
		t.Errorf("Ready message %q does not name the field and the offering", ready.Message)
	}
	f.createPods(1, "web", "1500m", "1Gi", nil)
	res := f.provision()
	if len(res.Created) != 1 {
		t.Fatalf("created %d NodeClaims, want 1", len(res.Created))
	}
	if got := plannedType(t, res.Created[0]); got != "m5.large" {
		t.Fatalf("planned %s, want m5.large, the plan without the overlay", got)
	}
}
