package nodeclass_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// dryRunActions are the launch actions the resolver dry-runs.
var dryRunActions = map[string]bool{"ec2:CreateFleet": true, "ec2:CreateLaunchTemplate": true, "ec2:RunInstances": true}

// dryRunCalls counts the emulator's recorded launch calls (the resolver
// makes no others, so every one is a dry run).
func dryRunCalls(e *awsemu.Emulator) (n int) {
	for _, c := range e.Calls() {
		if dryRunActions[c.Action] {
			n++
		}
	}
	return n
}

func resolveClass(t *testing.T, r *nodeclass.Resolver) *awsv1.EC2NodeClass {
	t.Helper()
	got, err := r.Resolve(context.Background(), discoveryClass())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDryRunAuthCheckFailureMakesClassUnready(t *testing.T) {
	for action, reason := range map[string]string{
		"ec2:CreateFleet":          nodeclass.ReasonCreateFleetAuthCheckFailed,
		"ec2:CreateLaunchTemplate": nodeclass.ReasonCreateLaunchTemplateAuthCheckFailed,
		"ec2:RunInstances":         nodeclass.ReasonRunInstancesAuthCheckFailed,
	} {
		t.Run(action, func(t *testing.T) {
			e, r := newResolver(t)
			clk := r.Clock.(*clocktesting.FakePassiveClock)
			if err := e.DenyAction(action); err != nil {
				t.Fatal(err)
			}
			got := resolveClass(t, r)
			if c := cond(got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionFalse || c.Reason != reason {
				t.Fatalf("ValidationSucceeded = %s/%s %q, want False/%s", c.Status, c.Reason, c.Message, reason)
			}
			if got.IsTrue(awsv1.ConditionTypeReady) {
				t.Fatal("class Ready while a dry-run launch call is unauthorized")
			}
			// The fault cleared, the failure is checked again within
			// DefaultDryRunFailureTTL and the class turns Ready.
			e.ClearFaults()
			clk.SetTime(clk.Now().Add(nodeclass.DefaultDryRunFailureTTL + time.Second))
			got = resolveClass(t, r)
			if c := cond(got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
				t.Fatalf("ValidationSucceeded after the fault cleared = %s/%s %q, want True", c.Status, c.Reason, c.Message)
			}
			if !got.IsTrue(awsv1.ConditionTypeReady) {
				t.Fatalf("class not Ready after the fault cleared: %+v", got.Status.Conditions)
			}
		})
	}
}

func TestDryRunPassIsCachedForSteadyClass(t *testing.T) {
	e, r := newResolver(t)
	clk := r.Clock.(*clocktesting.FakePassiveClock)
	e.ResetCalls()
	got := resolveClass(t, r)
	if c := cond(got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue || !got.IsTrue(awsv1.ConditionTypeReady) {
		t.Fatalf("ValidationSucceeded = %s/%s %q, want True and Ready", c.Status, c.Reason, c.Message)
	}
	if n := dryRunCalls(e); n != 3 {
		t.Fatalf("%d dry-run calls on the first resolution, want 3 (CreateLaunchTemplate, CreateFleet, RunInstances)", n)
	}
	for _, c := range e.Calls() {
		if dryRunActions[c.Action] && c.ErrorCode != "DryRunOperation" {
			t.Errorf("%s answered %q, want DryRunOperation (a dry run)", c.Action, c.ErrorCode)
		}
	}
	e.ResetCalls()
	for range 3 {
		clk.SetTime(clk.Now().Add(time.Minute))
		resolveClass(t, r)
	}
	if n := dryRunCalls(e); n != 0 {
		t.Fatalf("%d dry-run calls while the class and its resolution did not change, want 0", n)
	}
	clk.SetTime(clk.Now().Add(nodeclass.DefaultDryRunTTL))
	resolveClass(t, r)
	if n := dryRunCalls(e); n != 3 {
		t.Fatalf("%d dry-run calls after the cached pass expired, want 3", n)
	}
	// A changed spec is validated again.
	e.ResetCalls()
	nc := discoveryClass()
	nc.Spec.Tags = map[string]string{"team": "a"}
	if _, err := r.Resolve(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if n := dryRunCalls(e); n != 3 {
		t.Fatalf("%d dry-run calls after the spec changed, want 3", n)
	}
}

func TestDisableDryRunSkipsCalls(t *testing.T) {
	e, r := newResolver(t)
	r.DisableDryRun = true
	if err := e.DenyAction("ec2:CreateFleet"); err != nil {
		t.Fatal(err)
	}
	e.ResetCalls()
	got := resolveClass(t, r)
	if c := cond(got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue || !got.IsTrue(awsv1.ConditionTypeReady) {
		t.Fatalf("ValidationSucceeded = %s/%s %q, want True and Ready", c.Status, c.Reason, c.Message)
	}
	if n := dryRunCalls(e); n != 0 {
		t.Fatalf("%d dry-run calls with DisableDryRun, want 0", n)
	}
}
