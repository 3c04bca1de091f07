package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
)

// holdConsolidation gives the example NodePools consolidateAfter: Never
// for the suite: the tests written before disruption measure scale-ups and
// interruptions that consolidation would change. Disruption tests use
// their own pools.
func holdConsolidation() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var pools karpv1.NodePoolList
	if err := kube.List(ctx, &pools); err != nil {
		return err
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		base := np.DeepCopy()
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
		if err := kube.Patch(ctx, np, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("holding consolidation of NodePool %s: %w", np.Name, err)
		}
	}
	return nil
}

// releaseConsolidation gives the example NodePools consolidateAfter: 0s
// until the test ends, then holds their consolidation again.
func releaseConsolidation(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		if err := holdConsolidation(); err != nil {
			t.Error(err)
		}
	})
	var pools karpv1.NodePoolList
	if err := kube.List(t.Context(), &pools); err != nil {
		t.Fatal(err)
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		if !np.Spec.Disruption.ConsolidateAfter.IsNever() {
			continue // a test's own pool
		}
		base := np.DeepCopy()
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("0s")
		if err := kube.Patch(t.Context(), np, client.MergeFrom(base)); err != nil {
			t.Fatalf("releasing consolidation of NodePool %s: %v", np.Name, err)
		}
	}
}

// poolClaims are the NodeClaims of a pool that are not being deleted.
func poolClaims(t testing.TB, pool string) []karpv1.NodeClaim {
	var out []karpv1.NodeClaim
	for _, nc := range nodeClaims(t) {
		if nc.Labels[karpv1.NodePoolLabelKey] == pool && nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}

func spreadByHost(app string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
		}}
	}
}

func onPool(pool string, then func(*appsv1.Deployment)) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"e2e": pool}
		if then != nil {
			then(d)
		}
	}
}

func (s *scenario) scale(name string, replicas int32) {
	s.t.Helper()
	d := &appsv1.Deployment{}
	if err := kube.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, d); err != nil {
		s.t.Fatal(err)
	}
	base := d.DeepCopy()
	d.Spec.Replicas = ptr.To(replicas)
	if err := kube.Patch(s.ctx, d, client.MergeFrom(base)); err != nil {
		s.t.Fatal(err)
	}
}

// TestEmptiness: nodes left with only DaemonSet pods are removed once
// consolidateAfter has passed; with consolidateAfter: Never, or a budget
// of "0", they stay.
func TestEmptiness(t *testing.T) {
	s := newScenario(t)
	s.pool("empty", func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("20s")
	})
	s.pool("kept", nil) // Never
	s.pool("zero", func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("20s")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:  []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if err := kube.Create(s.ctx, ds); err != nil {
		t.Fatal(err)
	}
	s.deployment("web", 2, "500m", "512Mi", onPool("empty", spreadByHost("web")))
	s.deployment("api", 1, "500m", "512Mi", onPool("kept", nil))
	s.deployment("jobs", 1, "500m", "512Mi", onPool("zero", nil))
	eventually(t, 3*time.Minute, "4 nodes with their pods running", func() (bool, error) {
		running, _, err := s.running()
		e, k, z := len(poolClaims(t, "empty")), len(poolClaims(t, "kept")), len(poolClaims(t, "zero"))
		return running >= 4 && e == 2 && k == 1 && z == 1, err
	})
	emptyClaims := poolClaims(t, "empty")
	kept, zero := poolClaims(t, "kept")[0], poolClaims(t, "zero")[0]

	s.scale("web", 0)
	s.scale("api", 0)
	s.scale("jobs", 0)
	eventually(t, 3*time.Minute, "the empty pool's nodes removed", func() (bool, error) {
		if left := len(poolClaims(t, "empty")); left > 0 {
			return false, fmt.Errorf("%d NodeClaims left in pool empty", left)
		}
		return true, nil
	})
	for _, nc := range emptyClaims {
		if evs := awaitEvents(t, 30*time.Second, "NodeClaim", "", nc.Name, disruption.ReasonDisruptionTerminating); len(evs) == 0 {
			t.Errorf("no %s event on %s", disruption.ReasonDisruptionTerminating, nc.Name)
		} else if !strings.Contains(evs[0].Note, "Empty") {
			np := &karpv1.NodePool{}
			_ = kube.Get(s.ctx, client.ObjectKey{Name: "empty"}, np)
			t.Errorf("%s note %q does not say Empty (its annotations at launch %v; the pool's now %v, generation %d)",
				nc.Name, evs[0].Note, nc.Annotations, np.Annotations, np.Generation)
		}
	}
	consistently(t, 20*time.Second, "the Never pool's and the budget-0 pool's nodes stay", func() (bool, error) {
		k, z := poolClaims(t, "kept"), poolClaims(t, "zero")
		return len(k) == 1 && k[0].Name == kept.Name && len(z) == 1 && z[0].Name == zero.Name, nil
	})
	if evs := controllerEvents(t, "NodeClaim", "", zero.Name, disruption.ReasonDisruptionBlocked); len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Note, "BudgetExhausted") {
		t.Errorf("no DisruptionBlocked event with BudgetExhausted on the budget-0 pool's NodeClaim %s: %v", zero.Name, evs)
	}
}

// TestDriftByPublishedImage: a newer AMI published through the emulator
// makes the nodes of the class drift; each is replaced (one at a time, the
// default 10% budget of 2 nodes), the PDB is never violated, the old
// instances are terminated.
func TestDriftByPublishedImage(t *testing.T) {
	s := newScenario(t)
	s.pool("drift", nil) // consolidateAfter Never: drift replacement still runs
	s.deployment("web", 2, "500m", "512Mi", onPool("drift", spreadByHost("web")))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	if err := kube.Create(s.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	s.waitRunning(2, 3*time.Minute)
	old := poolClaims(t, "drift")
	if len(old) != 2 {
		t.Fatalf("%d NodeClaims in pool drift, want 2", len(old))
	}

	cmd := exec.Command(binary, "local", "publish-image", "--dir", filepath.Join(workDir, "stack"), "--alias", "al2023@latest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("publish-image: %v\n%s", err, out)
	}
	oldIDs := map[string]bool{}
	for _, nc := range old {
		oldIDs[nc.Name] = true
	}
	violated := false
	eventually(t, 5*time.Minute, "every old node replaced, old instances terminated", func() (bool, error) {
		running, _, err := s.running()
		if err != nil {
			return false, err
		}
		if running < 1 && !violated {
			violated = true
			t.Errorf("no web pod running at %s: the PDB (minAvailable 1) was violated", time.Now().Format(time.RFC3339))
		}
		cur := poolClaims(t, "drift")
		for _, nc := range cur {
			if oldIDs[nc.Name] {
				return false, fmt.Errorf("%s (drifted: %v) still there", nc.Name, nc.IsTrue(karpv1.ConditionTypeDrifted))
			}
		}
		for _, nc := range old {
			if !instanceGone(instanceID(nc.Status.ProviderID)) {
				return false, fmt.Errorf("instance of %s not terminated", nc.Name)
			}
		}
		if running != 2 {
			return false, fmt.Errorf("%d web pods running", running)
		}
		return true, nil
	})
	for _, nc := range poolClaims(t, "drift") {
		if nc.Status.ImageID == old[0].Status.ImageID {
			t.Errorf("replacement %s runs the old image %s", nc.Name, nc.Status.ImageID)
		}
	}
}

// TestExpiration: with expireAfter: 2m (real time) the nodes are deleted
// when they expire, without a budget, and their pods end Running on new
// capacity that provisioning launches.
func TestExpiration(t *testing.T) {
	s := newScenario(t)
	s.pool("expiry", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("2m")
		// A budget of 0 does not hold expiration back.
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	s.deployment("web", 2, "500m", "512Mi", onPool("expiry", spreadByHost("web")))
	s.waitRunning(2, 3*time.Minute)
	first := poolClaims(t, "expiry")
	if len(first) != 2 {
		t.Fatalf("%d NodeClaims, want 2", len(first))
	}
	for _, nc := range first {
		if got := nc.Spec.ExpireAfter.String(); got != "2m" {
			t.Errorf("%s has expireAfter %q, want the pool's 2m", nc.Name, got)
		}
	}
	early := false
	eventually(t, 4*time.Minute, "the first nodes expired and the pods Running on new ones", func() (bool, error) {
		for _, nc := range nodeClaims(t) {
			if nc.DeletionTimestamp == nil || early {
				continue
			}
			for _, f := range first {
				// creationTimestamp has second precision.
				if nc.Name == f.Name && nc.DeletionTimestamp.Sub(nc.CreationTimestamp.Time) < 2*time.Minute-time.Second {
					early = true
					t.Errorf("%s deleted %s after creation, before its expireAfter", nc.Name, nc.DeletionTimestamp.Sub(nc.CreationTimestamp.Time))
				}
			}
		}
		cur := poolClaims(t, "expiry")
		for _, nc := range cur {
			for _, f := range first {
				if nc.Name == f.Name {
					return false, fmt.Errorf("%s (age %s) not expired yet", nc.Name, time.Since(nc.CreationTimestamp.Time).Round(time.Second))
				}
			}
		}
		running, _, err := s.running()
		if err != nil || running != 2 {
			return false, fmt.Errorf("%d pods running (%v)", running, err)
		}
		return true, nil
	})
	for _, nc := range first {
		if evs := awaitEvents(t, 30*time.Second, "NodeClaim", "", nc.Name, "Expired"); len(evs) == 0 {
			t.Errorf("no Expired event on %s", nc.Name)
		}
	}
}
