package local

import (
	"context"
	"testing"
)

func TestDemoControllerEnv(t *testing.T) {
	got := demoControllerEnv(func(string) string { return "" })
	if got["FEATURE_GATES"] != "SpotToSpotConsolidation=true" {
		t.Errorf("without FEATURE_GATES: %v, want the SpotToSpotConsolidation gate on", got)
	}
	if got := demoControllerEnv(func(k string) string {
		if k == "FEATURE_GATES" {
			return "SpotToSpotConsolidation=false"
		}
		return ""
	}); got != nil {
		t.Errorf("with FEATURE_GATES set: %v, want nothing added (the caller's value is inherited)", got)
	}
	// The demo command wires it into its controller component.
	t.Setenv("FEATURE_GATES", "")
	var opts *DemoOptions
	cmd := NewCmdDemo(func(_ context.Context, o *DemoOptions) error { opts = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range opts.Components {
		if ctrl, ok := c.(controllerFlags); ok {
			found = true
			if ctrl.Env["FEATURE_GATES"] != "SpotToSpotConsolidation=true" {
				t.Errorf("the demo's controller env is %v", ctrl.Env)
			}
		}
	}
	if !found {
		t.Error("the demo has no controller component")
	}
}
