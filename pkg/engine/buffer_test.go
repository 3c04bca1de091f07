package engine_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// bufferOf is a buffer of n pods shaped like tmpl.
func bufferOf(name string, n int, tmpl *corev1.Pod) engine.Buffer {
	return engine.Buffer{Namespace: "default", Name: name, Count: n,
		Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}}
}

// A buffer's pods are planned like pending pods of its shape: room for
// each, anti-affinity between them respected (one per node), its node
// selector respected, the real pending pods placed first on existing room,
// and the plan says where each buffer's room is.
func TestBufferRoom(t *testing.T) {
	shape := newPod("shape", "1", "1Gi", withLabels("app", "buf"), withNodeSelector(labelFamily, "c"),
		withAnti(corev1.LabelHostname, sel("app", "buf")))
	existing := existingNode("n1", "zone-a", "4", "8Gi", map[string]string{labelFamily: "c"})
	in := &engine.Input{
		Pods:      []*corev1.Pod{newPod("real", "3", "1Gi")},
		Nodes:     []engine.ExistingNode{{Node: existing, NodePool: "p"}},
		NodePools: []engine.NodePool{pool("p", 0)},
		Buffers:   []engine.Buffer{bufferOf("b", 3, shape)},
	}
	plan, err := engine.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := placementOf(plan, "real"); got != "n1" {
		t.Errorf("the real pod went to %q, want the existing node n1 (it is placed before the buffer)", got)
	}
	if len(plan.Buffers) != 1 {
		t.Fatalf("buffers %+v, want one", plan.Buffers)
	}
	r := plan.Buffers[0]
	// n1 has 1 cpu left after the real pod: one chunk fits there, the other
	// two need a node each (anti-affinity), of family c.
	if r.Wanted != 3 || r.Existing != 1 || r.New != 2 || r.Unschedulable != 0 || len(r.Nodes) != 1 || r.Nodes[0] != "n1" {
		t.Errorf("room %+v, want 1 on n1 and 2 new", r)
	}
	if len(plan.NodeClaims) != 2 {
		t.Fatalf("%d new NodeClaims, want 2 (one per chunk, anti-affinity)", len(plan.NodeClaims))
	}
	for _, nc := range plan.NodeClaims {
		if len(nc.Pods) != 1 {
			t.Errorf("claim %s holds %v, want one chunk", nc.Name, nc.Pods)
		}
		if name, ok := engine.BufferOf(nc.Pods[0]); !ok || name != "b" {
			t.Errorf("claim %s holds %v, not a pod of buffer b", nc.Name, nc.Pods)
		}
		if nc.Labels[labelFamily] != "c" {
			t.Errorf("claim %s is family %q, want the template's node selector c", nc.Name, nc.Labels[labelFamily])
		}
	}
	if len(in.Pods) != 1 {
		t.Errorf("Solve changed the input's pods: %d", len(in.Pods))
	}

	// Without the real pod the existing node holds one chunk (anti-affinity).
	in.Pods = nil
	plan, err = engine.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if r := plan.Buffers[0]; r.Existing != 1 || r.New != 2 {
		t.Errorf("room %+v, want 1 existing and 2 new", r)
	}
}

// The pool's limits hold for buffer pods: what does not fit is reported
// unschedulable for the buffer, not launched.
func TestBufferRespectsLimits(t *testing.T) {
	p := pool("p", 0)
	p.Limits = corev1.ResourceList{"nodes": resource.MustParse("1")}
	shape := newPod("shape", "1", "1Gi", withLabels("app", "buf"), withAnti(corev1.LabelHostname, sel("app", "buf")))
	plan, err := engine.Solve(&engine.Input{NodePools: []engine.NodePool{p}, Buffers: []engine.Buffer{bufferOf("b", 3, shape)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NodeClaims) != 1 {
		t.Errorf("%d NodeClaims, want 1 (limits.nodes 1)", len(plan.NodeClaims))
	}
	if r := plan.Buffers[0]; r.New != 1 || r.Unschedulable != 2 {
		t.Errorf("room %+v, want 1 new and 2 unschedulable", r)
	}
}

// Malformed buffers are input errors naming the field.
func TestBufferInputErrors(t *testing.T) {
	shape := newPod("shape", "1", "1Gi")
	for name, bs := range map[string][]engine.Buffer{
		"negative":  {bufferOf("b", -1, shape)},
		"duplicate": {bufferOf("b", 1, shape), bufferOf("b", 1, shape)},
		"too many":  {bufferOf("b", engine.MaxBufferPods+1, shape)},
		"unnamed":   {{Namespace: "default", Count: 1}},
	} {
		_, err := engine.Solve(&engine.Input{NodePools: []engine.NodePool{pool("p", 0)}, Buffers: bs})
		if !errors.Is(err, engine.ErrInvalidInput) {
			t.Errorf("%s: err %v, want ErrInvalidInput", name, err)
		}
		if _, err := engine.Compile(&engine.Input{NodePools: []engine.NodePool{pool("p", 0)}, Buffers: bs}); !errors.Is(err, engine.ErrInvalidInput) {
			t.Errorf("%s: Compile err %v, want ErrInvalidInput", name, err)
		}
	}
}
