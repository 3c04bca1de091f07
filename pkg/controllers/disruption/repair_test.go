package disruption_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

// injectFault labels the node so kwok leaves its conditions alone and
// writes cond into its status (a strategic merge on the status
// subresource, as a node agent would).
func (f *fixture) injectFault(node *corev1.Node, cond corev1.NodeCondition) {
	f.t.Helper()
	f.env.Eventually("fault injected into "+node.Name, func() (bool, error) {
		if err := f.env.Get(node); err != nil {
			return false, err
		}
		base := node.DeepCopy()
		node.Labels[controlplane.HoldConditionsLabel] = controlplane.HoldConditionsValue
		if err := f.env.Client.Patch(f.env.Context(), node, client.MergeFrom(base)); err != nil {
			return false, nil
		}
		base = node.DeepCopy()
		replaced := false
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == cond.Type {
				node.Status.Conditions[i], replaced = cond, true
			}
		}
		if !replaced {
			node.Status.Conditions = append(node.Status.Conditions, cond)
		}
		return f.env.Client.Status().Patch(f.env.Context(), node, client.StrategicMergeFrom(base)) == nil, nil
	})
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// A node whose kubelet reports Ready=False past the 30-minute toleration
// is replaced: not before the toleration, at once after it (no validation
// period), despite a do-not-disrupt pod on it, and deleted with its drain
// bounded by the policy's 10 minutes.
func TestUnhealthyNodeReplaced(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	sick, node := f.node("sick", "m5.large")
	_, well := f.node("well", "m5.large")
	f.pod("busy", well.Name, "1500m")
	p := f.pod("web", node.Name, "1500m")
	base := p.DeepCopy()
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	if err := f.env.Client.Patch(f.env.Context(), p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	f.injectFault(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "injected", LastTransitionTime: metav1.NewTime(f.env.Clock.Now()), LastHeartbeatTime: metav1.NewTime(f.env.Clock.Now())})

	c := f.controller(disruption.Options{NodeRepair: true})
	f.env.Clock.Step(20 * time.Minute)
	f.pass(c)
	if n := len(f.replacements()); n != 0 {
		t.Fatalf("repaired within the toleration: %d replacements", n)
	}
	f.env.Clock.Step(11 * time.Minute) // 31 minutes Ready=False
	f.pass(c)
	if err := f.env.Get(node); err != nil || readyStatus(node) != corev1.ConditionFalse {
		t.Fatalf("the injected Ready=False did not stay (Ready %q, err %v): kwok rewrote it", readyStatus(node), err)
	}
	reps := f.replacements()
	if len(reps) != 1 {
		t.Fatalf("%d replacements of the unhealthy node, want 1; events %v", len(reps), f.env.EventsAbout(node))
	}
	if err := f.env.Get(sick); err != nil {
		t.Fatal(err)
	}
	if cond := sick.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Reason != string(planner.ReasonUnhealthy) {
		t.Errorf("DisruptionReason = %+v, want reason Unhealthy", cond)
	}
	var cs struct {
		Reason                 string           `json:"reason"`
		TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod"`
	}
	if err := json.Unmarshal([]byte(sick.Annotations[disruption.CommandAnnotationKey]), &cs); err != nil || cs.Reason != "Unhealthy" ||
		cs.TerminationGracePeriod == nil || cs.TerminationGracePeriod.Duration != 10*time.Minute {
		t.Errorf("command %q (err %v), want reason Unhealthy with a 10m drain bound", sick.Annotations[disruption.CommandAnnotationKey], err)
	}
	f.env.Eventually("the unhealthy NodeClaim deleted once its replacement is initialized", func() (bool, error) {
		f.pass(c)
		f.env.Clock.Step(time.Second)
		gone, err := f.env.NotFound(sick)
		if err != nil || gone {
			return gone, err
		}
		return !sick.DeletionTimestamp.IsZero(), nil
	})
	if gone, _ := f.env.NotFound(sick); !gone {
		deadline, err := time.Parse(time.RFC3339, sick.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey])
		// (The controllers' clock is the test's fake clock.)
		if left := deadline.Sub(f.env.Clock.Now()); err != nil || left <= 0 || left > 10*time.Minute {
			t.Errorf("termination deadline %q, %s from now: want within the 10m drain bound (err %v)",
				sick.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], left, err)
		}
	}
	// The do-not-disrupt pod holds the drain only until the deadline. The
	// termination controllers requeue in real time: a change of the node
	// brings them back after each step of the fake clock.
	f.env.Clock.Step(11 * time.Minute)
	poke := 0
	f.env.Eventually("the unhealthy NodeClaim gone after its drain bound", func() (bool, error) {
		f.env.Clock.Step(time.Second)
		poke++
		patch := []byte(`{"metadata":{"annotations":{"test.dovetail.sh/poke":"` + strconv.Itoa(poke) + `"}}}`)
		if err := f.env.Client.Patch(f.env.Context(), node, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return false, err
		}
		return f.env.NotFound(sick)
	})
	if v := metricstest.Value(t, f.env.Metrics.NodeClaimsDisrupted.WithLabelValues("unhealthy", f.pool.Name, karpv1.CapacityTypeOnDemand)); v != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=unhealthy} = %v, want 1", v)
	}
	ev := f.env.EventuallyEventAbout(sick, disruption.ReasonDisruptionTerminating)
	if !strings.Contains(ev.Note, "Unhealthy") || !strings.Contains(ev.Note, "Ready=False") {
		t.Errorf("DisruptionTerminating note %q does not say why", ev.Note)
	}
}

// Off (the default), the unhealthy node stays.
func TestUnhealthyNodeKeptWithoutNodeRepair(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	sick, node := f.node("sick", "m5.large")
	f.pod("web", node.Name, "1500m")
	f.injectFault(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastTransitionTime: metav1.NewTime(f.env.Clock.Now())})
	c := f.controller(disruption.Options{})
	f.env.Clock.Step(time.Hour)
	f.pass(c)
	f.pass(c)
	if n := len(f.replacements()); n != 0 {
		t.Fatalf("NodeRepair off: %d replacements", n)
	}
	if err := f.env.Get(sick); err != nil || !sick.DeletionTimestamp.IsZero() || sick.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("NodeRepair off: the node is disrupted (err %v)", err)
	}
}
