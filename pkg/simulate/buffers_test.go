package simulate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// The shape of the buffer tests' chunks: 2 cpu and 4Gi.
const bufferTemplate = `apiVersion: v1
kind: PodTemplate
metadata: {name: shape}
template:
  metadata: {labels: {app: shape}}
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: "2", memory: 4Gi}}}]
`

func bufferDoc(spec string) string {
	return `apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: b}
spec: ` + spec + `
`
}

// bufferRoom finds buffer default/b in r.
func bufferRoom(t *testing.T, r *simulate.Result) simulate.BufferRoom {
	t.Helper()
	for _, b := range r.Buffers {
		if b.Buffer == "default/b" {
			return b
		}
	}
	t.Fatalf("no room for default/b in %+v (warnings %q)", r.Buffers, r.Warnings)
	return simulate.BufferRoom{}
}

// A buffer of 6 chunks of 2 cpu and 4Gi is planned as 6 more pods: the
// plan costs more than without it, the room is on new NodeClaims, and the
// table and JSON show it.
func TestSimulateBufferPlansRoom(t *testing.T) {
	base := simulateOverlay(t, bufferTemplate)
	if len(base.Buffers) != 0 {
		t.Fatalf("buffers without a CapacityBuffer: %+v", base.Buffers)
	}
	r := simulateOverlay(t, bufferTemplate, bufferDoc("{podTemplateRef: {name: shape}, replicas: 6}"))
	room := bufferRoom(t, r)
	if room.Wanted != 6 || room.New != 6 || room.Existing != 0 || room.Unschedulable != 0 || len(room.NodeClaims) == 0 {
		t.Errorf("room %+v, want 6 chunks on new NodeClaims", room)
	}
	if r.TotalPricePerHour <= base.TotalPricePerHour {
		t.Errorf("plan with the buffer costs $%.4f, without $%.4f: want more", r.TotalPricePerHour, base.TotalPricePerHour)
	}
	chunks := 0
	for _, nc := range r.NodeClaims {
		for _, p := range nc.Pods {
			if strings.HasPrefix(p, "default/capacitybuffer:b:") {
				chunks++
			}
		}
	}
	if chunks != 6 {
		t.Errorf("%d buffer pods on new NodeClaims, want 6", chunks)
	}
	var table bytes.Buffer
	if err := simulate.Render(&table, r, simulate.FormatTable); err != nil {
		t.Fatal(err)
	}
	if s := table.String(); !strings.Contains(s, "CAPACITYBUFFER") || !strings.Contains(s, "default/b") || !strings.Contains(s, "Buffer room: 6 of 6 chunks kept") {
		t.Errorf("table does not show the room:\n%s", s)
	}
	var out bytes.Buffer
	if err := simulate.Render(&out, r, simulate.FormatJSON); err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want)+"\n" {
		t.Errorf("JSON with buffers differs from encoding/json:\n%s\nwant\n%s", out.String(), want)
	}
	var back simulate.Result
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back.Buffers) != 1 || back.Buffers[0].New != 6 {
		t.Errorf("JSON buffers: %+v, %v", back.Buffers, err)
	}
}

// A scalableRef with a percentage keeps ceil(p% of the replicas) chunks
// shaped like the scalable's pods: 10% of 24 is 3.
func TestSimulateBufferPercentageOfScalable(t *testing.T) {
	r := simulateOverlay(t, bufferDoc("{scalableRef: {apiGroup: apps, kind: Deployment, name: web}, percentage: 10}"))
	if room := bufferRoom(t, r); room.Wanted != 3 || room.Existing+room.InFlight+room.New != 3 {
		t.Errorf("room %+v, want 3 chunks kept", room)
	}
}

// A buffer that does not resolve is a warning naming the file, the object
// and the field, and changes nothing else in the plan.
func TestSimulateBufferNotResolved(t *testing.T) {
	base := simulateOverlay(t, bufferTemplate)
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"missing template", "{podTemplateRef: {name: gone}, replicas: 2}",
			[]string{"PodTemplateNotFound", `in.yaml:`, `CapacityBuffer "b"`, "spec.podTemplateRef.name", "default/gone"}},
		{"missing scalable", "{scalableRef: {kind: StatefulSet, name: web}, replicas: 2}",
			[]string{"ScalableRefNotFound", `CapacityBuffer "b"`, "spec.scalableRef.name"}},
		{"percentage over 100", "{scalableRef: {kind: Deployment, name: web}, percentage: 150}",
			[]string{"ResolutionFailed", `CapacityBuffer "b"`, "spec.percentage", "must be at most 100"}},
		{"another autoscaler's", "{podTemplateRef: {name: shape}, replicas: 2, provisioningStrategy: example.com/other}",
			[]string{"another autoscaler's", "spec.provisioningStrategy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := simulateOverlay(t, bufferTemplate, bufferDoc(tc.spec))
			warned := strings.Join(r.Warnings, "\n")
			for _, w := range tc.want {
				if !strings.Contains(warned, w) {
					t.Errorf("warnings %q do not name %q", r.Warnings, w)
				}
			}
			if len(r.Buffers) != 0 || r.TotalPricePerHour != base.TotalPricePerHour || len(r.NodeClaims) != len(base.NodeClaims) {
				t.Errorf("the plan changed: buffers %+v, $%.4f (base $%.4f), %d claims (base %d)",
					r.Buffers, r.TotalPricePerHour, base.TotalPricePerHour, len(r.NodeClaims), len(base.NodeClaims))
			}
		})
	}
}

// examples/capacitybuffer/buffer.yaml with the example NodePools and a
// Deployment web is a simulate input: both buffers keep room (3 chunks of
// the PodTemplate, 20% of web's 10 replicas = 2).
func TestSimulateBufferExample(t *testing.T) {
	var data []byte
	for _, f := range []string{"ec2nodeclass.yaml", "nodepool-arm64-default.yaml", "nodepool-multi-default.yaml", "capacitybuffer/buffer.yaml"} {
		doc, err := os.ReadFile("../../examples/" + f)
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(data, doc...), "\n---\n"...)
	}
	data = append(data, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 10\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 500m, memory: 1Gi}}}]}\n"...)
	m := &simulate.Manifests{}
	if err := m.Read("in.yaml", data); err != nil {
		t.Fatal(err)
	}
	r, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, b := range r.Buffers {
		got[b.Buffer] = [2]int{b.Wanted, b.Existing + b.InFlight + b.New}
	}
	if got["default/batch-worker"] != [2]int{3, 3} || got["default/web-headroom"] != [2]int{2, 2} {
		t.Errorf("room %v (warnings %q), want batch-worker 3 of 3, web-headroom 2 of 2", got, r.Warnings)
	}
}

// The engine's complaint about a buffer's chunk names the PodTemplate it
// is shaped from, once.
func TestSimulateBufferBadTemplateLocated(t *testing.T) {
	m := &simulate.Manifests{}
	in := strings.Join([]string{nodeClassDoc, overlayPool, `apiVersion: v1
kind: PodTemplate
metadata: {name: bad}
template:
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: "-1"}}}]
`, bufferDoc("{podTemplateRef: {name: bad}, replicas: 2}")}, "---\n")
	if err := m.Read("in.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	_, err := simulate.Run(m, simulate.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}})
	var ies simulate.InputErrors
	if !errors.As(err, &ies) || len(ies) != 1 || ies[0].Kind != "PodTemplate" || ies[0].Name != "bad" ||
		!strings.Contains(err.Error(), "template.spec.containers") || !strings.Contains(err.Error(), "CapacityBuffer default/b") {
		t.Errorf("error %v, want one naming PodTemplate bad, template.spec.containers and the buffer", err)
	}
}

// Room that fits on an existing node is counted there, not launched.
func TestSimulateBufferRoomOnExistingNode(t *testing.T) {
	const node = `apiVersion: v1
kind: Node
metadata:
  name: roomy
  labels: {karpenter.sh/nodepool: general, karpenter.sh/capacity-type: on-demand, node.kubernetes.io/instance-type: m6i.2xlarge, topology.kubernetes.io/zone: us-east-1a, kubernetes.io/arch: amd64, kubernetes.io/os: linux}
status:
  allocatable: {cpu: 7910m, memory: 30Gi, pods: "58"}
`
	m := &simulate.Manifests{}
	in := strings.Join([]string{nodeClassDoc, overlayPool, node, bufferTemplate, bufferDoc("{podTemplateRef: {name: shape}, replicas: 2}")}, "---\n")
	// Without web's 24 pods the node is free for the buffer.
	in = strings.Replace(in, "replicas: 24", "replicas: 0", 1)
	if err := m.Read("in.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	r, err := simulate.Run(m, simulate.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	room := bufferRoom(t, r)
	if room.Wanted != 2 || room.Existing != 2 || room.New != 0 || len(room.Nodes) != 1 || room.Nodes[0] != "roomy" || len(r.NodeClaims) != 0 {
		t.Errorf("room %+v with %d new claims, want both chunks on roomy", room, len(r.NodeClaims))
	}
}
