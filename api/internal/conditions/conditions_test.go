package conditions

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetKeepsTransitionTime(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var conds []metav1.Condition
	Set(&conds, metav1.Condition{Type: "A", Status: metav1.ConditionFalse, Reason: "R1"}, t0)
	// Same status, new reason: a change, but not a transition.
	if !Set(&conds, metav1.Condition{Type: "A", Status: metav1.ConditionFalse, Reason: "R2"}, t0.Add(time.Minute)) {
		t.Fatal("reason change not reported")
	}
	if got := Get(conds, "A"); !got.LastTransitionTime.Time.Equal(t0) || got.Reason != "R2" {
		t.Errorf("after reason change: %+v", got)
	}
	if !Set(&conds, metav1.Condition{Type: "A", Status: metav1.ConditionTrue}, t0.Add(2*time.Minute)) {
		t.Fatal("status change not reported")
	}
	got := Get(conds, "A")
	if !got.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) || got.Reason != "True" {
		t.Errorf("after status change: %+v (want transition at t0+2m and the status as reason)", got)
	}
	if len(conds) != 1 {
		t.Errorf("%d conditions, want 1", len(conds))
	}
}

func TestRoot(t *testing.T) {
	conds := []metav1.Condition{
		{Type: "A", Status: metav1.ConditionTrue, Reason: "Ok"},
		{Type: "B", Status: metav1.ConditionUnknown, Reason: "Waiting", Message: "b"},
		{Type: "C", Status: metav1.ConditionFalse, Reason: "Broken", Message: "c"},
	}
	tests := []struct {
		name       string
		dependents []string
		status     metav1.ConditionStatus
		reason     string
	}{
		{name: "all true", dependents: []string{"A"}, status: metav1.ConditionTrue, reason: "Ready"},
		{name: "false wins over unknown", dependents: []string{"A", "B", "C"}, status: metav1.ConditionFalse, reason: "Broken"},
		{name: "unknown", dependents: []string{"A", "B"}, status: metav1.ConditionUnknown, reason: "Waiting"},
		{name: "missing is unknown", dependents: []string{"A", "D"}, status: metav1.ConditionUnknown, reason: "AwaitingReconciliation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Root(conds, "Ready", 7, tt.dependents...)
			if got.Status != tt.status || got.Reason != tt.reason || got.ObservedGeneration != 7 || got.Type != "Ready" {
				t.Errorf("Root = %+v, want %s/%s", got, tt.status, tt.reason)
			}
		})
	}
}
