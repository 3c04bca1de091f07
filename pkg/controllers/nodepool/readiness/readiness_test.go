package readiness_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/readiness"
)

// setClassReady writes the Ready condition the node class controller would.
func setClassReady(t *testing.T, env *controllerstest.Env, class *awsv1.EC2NodeClass, ready bool) {
	t.Helper()
	if err := env.Get(class); err != nil {
		t.Fatal(err)
	}
	status, reason := metav1.ConditionTrue, "Resolved"
	if !ready {
		status, reason = metav1.ConditionFalse, "SubnetsNotFound"
	}
	for _, c := range awsv1.ReadyDependents {
		class.SetCondition(c, status, reason, "no subnet matches", env.Clock.Now())
	}
	if err := env.Client.Status().Update(env.Context(), class); err != nil {
		t.Fatal(err)
	}
}

func waitPool(t *testing.T, env *controllerstest.Env, np *karpv1.NodePool, cond string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	env.Eventually(cond+"="+string(status)+"/"+reason, func() (bool, error) {
		if err := env.Get(np); err != nil {
			return false, err
		}
		c := np.GetCondition(cond)
		return c != nil && c.Status == status && c.Reason == reason, nil
	})
}

func TestNodePoolReadinessFollowsItsNodeClassAndValidation(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(readiness.NewController(env.Manager.GetClient(), env.Clock, readiness.Options{}))

	np := controllerstest.NodePool("team-a")
	env.Create(np)
	waitPool(t, env, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, readiness.ReasonNodeClassNotFound)
	waitPool(t, env, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, readiness.ReasonValid)
	if np.IsTrue(karpv1.ConditionTypeReady) {
		t.Fatal("Ready without a node class")
	}

	class := controllerstest.EC2NodeClass("default")
	env.Create(class)
	waitPool(t, env, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionUnknown, readiness.ReasonAwaitingNodeClass)

	setClassReady(t, env, class, false)
	waitPool(t, env, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, readiness.ReasonNodeClassNotReady)

	setClassReady(t, env, class, true)
	waitPool(t, env, np, karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready")
	if np.Status.NodeClassObservedGeneration != class.Generation {
		t.Errorf("nodeClassObservedGeneration = %d, want %d", np.Status.NodeClassObservedGeneration, class.Generation)
	}

	// A template label key the schema lets through but Kubernetes refuses.
	if err := env.Get(np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.Labels = map[string]string{"te am": "a"}
	if err := env.Client.Update(env.Context(), np); err != nil {
		t.Fatalf("the schema refused the label (the test needs one only RuntimeValidate catches): %v", err)
	}
	waitPool(t, env, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, readiness.ReasonValidationFailed)
	if c := np.GetCondition(karpv1.ConditionTypeValidationSucceeded); c == nil || !contains(c.Message, "spec.template.metadata.labels[te am]") {
		t.Errorf("message %q does not name the field", c.Message)
	}
	waitPool(t, env, np, karpv1.ConditionTypeReady, metav1.ConditionFalse, readiness.ReasonValidationFailed)
}

func TestUnsupportedNodeClassKind(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(readiness.NewController(env.Manager.GetClient(), env.Clock, readiness.Options{}))
	np := controllerstest.NodePool("other-kind")
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "example.com", Kind: "GCENodeClass", Name: "x"}
	env.Create(np)
	waitPool(t, env, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, readiness.ReasonUnsupportedNodeClass)
}

// A budget reason dovetail does not act on (Unhealthy: no node repair)
// gives the pool DisruptionSupported=False/Unsupported naming the field,
// without making it unready; removing it removes the condition.
func TestUnsupportedDisruptionReason(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(readiness.NewController(env.Manager.GetClient(), env.Clock, readiness.Options{}))
	class := controllerstest.EC2NodeClass("default")
	env.Create(class)
	setClassReady(t, env, class, true)
	np := controllerstest.NodePool("repair")
	np.Spec.Disruption.Budgets = []karpv1.Budget{
		{Nodes: "10%"},
		{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonUnhealthy}},
	}
	env.Create(np)
	waitPool(t, env, np, karpv1.ConditionTypeDisruptionSupported, metav1.ConditionFalse, readiness.ReasonUnsupported)
	c := np.GetCondition(karpv1.ConditionTypeDisruptionSupported)
	if !contains(c.Message, "spec.disruption.budgets[1].reasons[1]") || !contains(c.Message, "Unhealthy") {
		t.Errorf("message %q does not name the field and value", c.Message)
	}
	waitPool(t, env, np, karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready")

	env.Eventually("the Unhealthy reason removed", func() (bool, error) {
		if err := env.Get(np); err != nil {
			return false, err
		}
		np.Spec.Disruption.Budgets[1].Reasons = []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}
		return env.Client.Update(env.Context(), np) == nil, nil
	})
	env.Eventually("DisruptionSupported removed", func() (bool, error) {
		if err := env.Get(np); err != nil {
			return false, err
		}
		return np.GetCondition(karpv1.ConditionTypeDisruptionSupported) == nil, nil
	})
	if !np.IsTrue(karpv1.ConditionTypeReady) {
		t.Error("the pool is not Ready after the change")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// With NodeRepair on, the Unhealthy reason limits repair: nothing is
// reported unsupported.
func TestUnhealthyReasonSupportedWithNodeRepair(t *testing.T) {
	np := controllerstest.NodePool("repair")
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonUnhealthy}}}
	if got := readiness.UnsupportedDisruption(np, false); len(got) != 1 || !contains(got[0], "NodeRepair") {
		t.Errorf("NodeRepair off: %q, want one entry naming the gate", got)
	}
	if got := readiness.UnsupportedDisruption(np, true); len(got) != 0 {
		t.Errorf("NodeRepair on: %q, want nothing unsupported", got)
	}
}

// A static pool (spec.replicas) is refused, naming the StaticCapacity gate,
// while the gate is off, and valid (so Ready) with it on.
func TestStaticPoolFollowsTheStaticCapacityGate(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[gate], func(t *testing.T) {
			env := controllerstest.New(t, cp.RESTConfig())
			env.Start(readiness.NewController(env.Manager.GetClient(), env.Clock, readiness.Options{StaticCapacity: gate}))
			class := controllerstest.EC2NodeClass("default")
			env.Create(class)
			setClassReady(t, env, class, true)
			np := controllerstest.NodePool("static-" + map[bool]string{false: "off", true: "on"}[gate])
			n := int64(2)
			np.Spec.Replicas = &n
			env.Create(np)
			if !gate {
				waitPool(t, env, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, readiness.ReasonValidationFailed)
				if c := np.GetCondition(karpv1.ConditionTypeValidationSucceeded); !contains(c.Message, "StaticCapacity") || !contains(c.Message, "spec.replicas") {
					t.Errorf("message %q does not name the field and the gate", c.Message)
				}
				if np.IsTrue(karpv1.ConditionTypeReady) {
					t.Error("a static pool is Ready with the gate off")
				}
				return
			}
			waitPool(t, env, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, readiness.ReasonValid)
			waitPool(t, env, np, karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready")
		})
	}
}
