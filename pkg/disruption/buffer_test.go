package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// An empty node that holds a CapacityBuffer's room is kept (code
// CapacityBuffer), the other empty node goes; without the buffer both go.
// A busy node whose removal would take the room is not consolidated.
func TestBufferRoomIsKept(t *testing.T) {
	f := newFleet(types(family("m5")), "on-demand")
	a := f.node("m5.xlarge", "on-demand")
	b := f.node("m5.xlarge", "on-demand")
	shape := workload.NewPod("default", "shape", "3", "1Gi")
	f.in.Buffers = []engine.Buffer{{Namespace: "default", Name: "warm", Count: 1,
		Template: corev1.PodTemplateSpec{Spec: shape.Spec}}}
	plan := compute(t, f.input(open()))
	if disrupted(plan) != 1 {
		t.Fatalf("%d nodes disrupted, want 1 (the one not holding the room): %+v", disrupted(plan), plan.Commands)
	}
	kept := a
	if plan.Commands[0].Nodes[0] == a {
		kept = b
	}
	if code := keptCode(t, plan, kept); code != disruption.CodeBufferRoom {
		t.Errorf("node %s kept with %s, want %s", kept, code, disruption.CodeBufferRoom)
	}

	f.in.Buffers = nil
	if plan := compute(t, f.input(open())); disrupted(plan) != 2 {
		t.Errorf("without the buffer %d nodes disrupted, want both empty nodes", disrupted(plan))
	}

	// Two half-used nodes would consolidate into one; with a buffer that
	// needs the other half, neither goes.
	g := newFleet(types(family("m5")), "on-demand")
	g.node("m5.xlarge", "on-demand", "1")
	g.node("m5.xlarge", "on-demand", "1")
	g.in.Buffers = []engine.Buffer{{Namespace: "default", Name: "warm", Count: 2,
		Template: corev1.PodTemplateSpec{Spec: workload.NewPod("default", "shape", "2500m", "1Gi").Spec}}}
	if plan := compute(t, g.input(open())); disrupted(plan) != 0 {
		t.Errorf("with the buffer's room on both nodes %d were disrupted: %+v", disrupted(plan), plan.Commands)
	}
	g.in.Buffers = nil
	if plan := compute(t, g.input(open())); disrupted(plan) == 0 {
		t.Error("without the buffer the half-used nodes were not consolidated (the test shows nothing)")
	}
}

// A drifted node holding a buffer's room is replaced (the peer's
// CapacityBuffer suite: "should allow drift to replace buffer nodes"): it
// is deleted, and provisioning launches the room again (it sees the room
// gone once the node is tainted). The same node not drifted is kept for
// the room.
func TestDriftReplacesBufferNodes(t *testing.T) {
	f := newFleet(types(family("m5")), "on-demand")
	a := f.node("m5.xlarge", "on-demand")
	f.in.Buffers = []engine.Buffer{{Namespace: "default", Name: "warm", Count: 1,
		Template: corev1.PodTemplateSpec{Spec: workload.NewPod("default", "shape", "3", "1Gi").Spec}}}
	in := f.input(open())
	if plan := compute(t, in); len(plan.Commands) != 0 || keptCode(t, plan, a) != disruption.CodeBufferRoom {
		t.Fatalf("not drifted: commands %+v; want the node kept for the buffer's room", plan.Commands)
	}
	st := in.Nodes[a]
	st.Drifted = "AMIDrift"
	in.Nodes[a] = st
	plan := compute(t, in)
	if len(plan.Commands) != 1 {
		k := plan.Kept
		t.Fatalf("drifted: commands %+v, kept %+v; want the node replaced", plan.Commands, k)
	}
	c := plan.Commands[0]
	if c.Reason != disruption.ReasonDrifted || len(c.Nodes) != 1 || c.Nodes[0] != a || !strings.Contains(c.Message, "CapacityBuffer") {
		t.Fatalf("command %+v; want drift of %s saying provisioning launches the buffer's room again", c, a)
	}
}
