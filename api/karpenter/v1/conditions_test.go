package v1_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func TestNodeClaimSetCondition(t *testing.T) {
	nc := &karpv1.NodeClaim{}
	nc.Generation = 3

	if !nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", t0) {
		t.Fatal("first set reported no change")
	}
	launched := nc.GetCondition(karpv1.ConditionTypeLaunched)
	if launched == nil || !launched.LastTransitionTime.Time.Equal(t0) || launched.ObservedGeneration != 3 {
		t.Fatalf("Launched = %+v, want True at t0 with generation 3", launched)
	}
	ready := nc.GetCondition(karpv1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionUnknown {
		t.Fatalf("Ready after Launched only = %+v, want Unknown", ready)
	}

	t1 := t0.Add(time.Minute)
	if nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", t1) {
		t.Error("setting the same condition again reported a change")
	}
	if got := nc.GetCondition(karpv1.ConditionTypeLaunched).LastTransitionTime.Time; !got.Equal(t0) {
		t.Errorf("unchanged status moved lastTransitionTime to %v", got)
	}

	nc.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "", t1)
	nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionFalse, "NotReady", "node not ready", t1)
	ready = nc.GetCondition(karpv1.ConditionTypeReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != "NotReady" {
		t.Errorf("Ready with Initialized=False = %+v, want False/NotReady", ready)
	}
	if nc.IsTrue(karpv1.ConditionTypeReady) {
		t.Error("IsTrue(Ready) with Initialized=False")
	}

	t2 := t1.Add(time.Minute)
	nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", t2)
	if !nc.IsTrue(karpv1.ConditionTypeReady) {
		t.Fatalf("Ready not True once Launched, Registered and Initialized are: %+v", nc.Status.Conditions)
	}
	if got := nc.GetCondition(karpv1.ConditionTypeReady).LastTransitionTime.Time; !got.Equal(t2) {
		t.Errorf("Ready transitioned at %v, want %v", got, t2)
	}

	// A non-dependent condition does not touch Ready.
	nc.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted", "", t2.Add(time.Hour))
	if !nc.IsTrue(karpv1.ConditionTypeReady) || !nc.IsTrue(karpv1.ConditionTypeDrifted) {
		t.Error("Drifted changed Ready or was not set")
	}
	if !nc.ClearCondition(karpv1.ConditionTypeDrifted) || nc.GetCondition(karpv1.ConditionTypeDrifted) != nil {
		t.Error("ClearCondition did not remove Drifted")
	}
	if nc.ClearCondition(karpv1.ConditionTypeDrifted) {
		t.Error("ClearCondition of a missing condition reported a change")
	}
}

func TestNodePoolReady(t *testing.T) {
	np := &karpv1.NodePool{}
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", t0)
	if np.IsTrue(karpv1.ConditionTypeReady) {
		t.Fatal("Ready without NodeClassReady")
	}
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", t0)
	if !np.IsTrue(karpv1.ConditionTypeReady) {
		t.Fatalf("Ready not True: %+v", np.Status.Conditions)
	}
	// NodeRegistrationHealthy is informational: it does not make the pool
	// unready.
	np.SetCondition(karpv1.ConditionTypeNodeRegistrationHealthy, metav1.ConditionFalse, "Unhealthy", "", t0)
	if !np.IsTrue(karpv1.ConditionTypeReady) {
		t.Error("NodeRegistrationHealthy=False made the pool unready")
	}
}

func ExampleNodeClaim_SetCondition() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nc := &karpv1.NodeClaim{}
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		nc.SetCondition(c, metav1.ConditionTrue, c, "", now)
		fmt.Println(c, "-> Ready:", nc.GetCondition(karpv1.ConditionTypeReady).Status)
	}
	// Output:
	// Launched -> Ready: Unknown
	// Registered -> Ready: Unknown
	// Initialized -> Ready: True
}
