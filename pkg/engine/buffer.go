package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Buffer is spare capacity kept on purpose (a CapacityBuffer): room for
// Count pods shaped like Template, planned as pending pods that no real
// pod is waiting for. The engine places them after the input's pending
// pods, so real pods take existing room first; they honour every
// constraint a real pod of that shape would (requests, node selectors,
// affinity and anti-affinity, topology spread, taints, NodePool limits).
// A buffer pod placed on an existing node or in-flight NodeClaim is room
// that is already there; one on a new NodeClaim is room to launch.
type Buffer struct {
	// Namespace and Name name the buffer; its pods are planned in
	// Namespace (for affinity namespaces and volume claims).
	Namespace, Name string
	// Template is the shape of one pod (labels, annotations, spec).
	Template corev1.PodTemplateSpec
	// Count is how many pods of that shape to keep room for.
	Count int
}

// MaxBufferPods caps the buffer pods of one input (all buffers together):
// room is planned pod by pod, and a typo (replicas: 1000000) must not
// stall provisioning. Callers cut or refuse larger buffers first.
const MaxBufferPods = 2000

// bufferPodPrefix starts the name of every buffer pod. A colon is never in
// a real pod's name, so a buffer pod's PodRef cannot name a real pod.
const bufferPodPrefix = "capacitybuffer:"

// BufferPodRef names the i-th pod of buffer namespace/name in a plan.
func BufferPodRef(namespace, name string, i int) PodRef {
	return PodRef{Namespace: namespace, Name: bufferPodPrefix + name + ":" + strconv.Itoa(i)}
}

// BufferOf reports which buffer a plan's pod belongs to: its name, and ok
// false for a real pod.
func BufferOf(ref PodRef) (name string, ok bool) {
	rest, ok := strings.CutPrefix(ref.Name, bufferPodPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", false
	}
	return rest[:i], true
}

// IsBufferPod reports whether pod is one of the engine's buffer pods (in
// a what-if or a plan's input), not a pod of the cluster.
func IsBufferPod(pod *corev1.Pod) bool {
	return pod != nil && strings.HasPrefix(pod.Name, bufferPodPrefix)
}

// BufferRoom is where a plan keeps one buffer's room.
type BufferRoom struct {
	Namespace, Name string
	// Wanted is the buffer's Count; Existing of its pods fit on existing
	// nodes, InFlight on NodeClaims being launched, New on new NodeClaims
	// of the plan, and Unschedulable nowhere (limits, constraints).
	Wanted, Existing, InFlight, New, Unschedulable int
	// Nodes are the existing nodes that hold some of the room (sorted).
	Nodes []string
}

// withBuffers returns in with the buffers' pods appended to its pending
// pods (in itself when it has no buffer), or the errors of malformed
// buffers.
func withBuffers(in *Input) (*Input, field.ErrorList) {
	if in == nil || len(in.Buffers) == 0 {
		return in, nil
	}
	var errs field.ErrorList
	total := 0
	seen := map[string]bool{}
	for i, b := range in.Buffers {
		path := field.NewPath("buffers").Index(i)
		key := b.Namespace + "/" + b.Name
		switch {
		case b.Name == "" || b.Namespace == "":
			errs = append(errs, field.Required(path.Child("name"), "a buffer needs a namespace and a name"))
		case seen[key]:
			errs = append(errs, field.Duplicate(path.Child("name"), key))
		case b.Count < 0:
			errs = append(errs, field.Invalid(path.Child("count"), b.Count, "must not be negative"))
		}
		seen[key] = true
		total += max(b.Count, 0)
	}
	if total > MaxBufferPods {
		errs = append(errs, field.TooMany(field.NewPath("buffers"), total, MaxBufferPods))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := *in
	out.Pods = make([]*corev1.Pod, 0, len(in.Pods)+total)
	out.Pods = append(out.Pods, in.Pods...)
	for _, b := range in.Buffers {
		for i := range b.Count {
			out.Pods = append(out.Pods, bufferPod(b, i))
		}
	}
	out.Buffers = nil
	return &out, nil
}

// bufferPod is the i-th pod of b: the template's metadata and spec, never
// bound, pending.
func bufferPod(b Buffer, i int) *corev1.Pod {
	ref := BufferPodRef(b.Namespace, b.Name, i)
	pod := &corev1.Pod{Spec: b.Template.Spec}
	pod.Name, pod.Namespace = ref.Name, ref.Namespace
	pod.UID = types.UID(fmt.Sprintf("%s/%s", ref.Namespace, ref.Name))
	pod.Labels, pod.Annotations = b.Template.Labels, b.Template.Annotations
	pod.Spec.NodeName = ""
	pod.Status.Phase = corev1.PodPending
	return pod
}

// bufferRooms sums where plan put each buffer's pods.
func bufferRooms(buffers []Buffer, plan *Plan) []BufferRoom {
	if len(buffers) == 0 {
		return nil
	}
	idx := make(map[PodRef]int, len(buffers))
	out := make([]BufferRoom, len(buffers))
	for i, b := range buffers {
		out[i] = BufferRoom{Namespace: b.Namespace, Name: b.Name, Wanted: b.Count}
		idx[PodRef{Namespace: b.Namespace, Name: b.Name}] = i
	}
	find := func(ref PodRef) *BufferRoom {
		name, ok := BufferOf(ref)
		if !ok {
			return nil
		}
		i, ok := idx[PodRef{Namespace: ref.Namespace, Name: name}]
		if !ok {
			return nil
		}
		return &out[i]
	}
	for _, pl := range plan.Existing {
		if r := find(pl.Pod); r != nil {
			if pl.InFlight {
				r.InFlight++
				continue
			}
			r.Existing++
			if len(r.Nodes) == 0 || r.Nodes[len(r.Nodes)-1] != pl.Node {
				r.Nodes = append(r.Nodes, pl.Node)
			}
		}
	}
	for _, nc := range plan.NodeClaims {
		for _, ref := range nc.Pods {
			if r := find(ref); r != nil {
				r.New++
			}
		}
	}
	for _, u := range plan.Unschedulable {
		if r := find(u.Pod); r != nil {
			r.Unschedulable++
		}
	}
	for i := range out {
		out[i].Nodes = sortedUnique(out[i].Nodes)
	}
	return out
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
