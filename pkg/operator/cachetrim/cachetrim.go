package cachetrim

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// ByObject returns the per-kind cache options with the Pod and Node
// transforms; other kinds get only managed fields stripped
// (DefaultTransform).
//
// Pods are also read without a deep copy (UnsafeDisableDeepCopy): a Get or
// List of Pods returns the cached objects themselves, shared. Every reader
// only reads them or changes a shallow copy's scalar fields (the planners'
// "q := *pod; q.Spec.NodeName = ..."); none may change a map, a slice or a
// pointed-to field of a Pod it read. At 30,000 pods, a copied list per
// disruption pass and per NodePool recount was most of the heap.
func (t *Trimmer) ByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:       {Transform: t.Transform, UnsafeDisableDeepCopy: ptr.To(true)},
		&corev1.Node{}:      {Transform: t.Transform},
		&karpv1.NodeClaim{}: {Transform: t.Transform},
	}
}

// Options are the cache options of the controller manager: a new
// Trimmer's ByObject plus managed fields stripped from every other kind.
func Options() cache.Options {
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: NewTrimmer().ByObject()}
}

// Trimmer trims the cache's Pods and Nodes and points their repeated parts
// at shared instances. Its tables of shared values are its own: one
// Trimmer per cache, no state at package level.
type Trimmer struct{ sh *sharer }

// NewTrimmer returns a Trimmer with empty tables.
func NewTrimmer() *Trimmer { return &Trimmer{sh: newSharer()} }

// Transform trims a Pod (Pod) or a Node (Node) in place and returns it,
// and interns a NodeClaim's repeated strings; every object comes back with
// its managed fields dropped.
func (t *Trimmer) Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		t.Pod(o)
		return o, nil
	case *corev1.Node:
		t.Node(o)
		return o, nil
	case *karpv1.NodeClaim:
		o.ManagedFields = nil
		nodeClaim(o)
		return o, nil
	}
	return cache.TransformStripManagedFields()(obj)
}

// Pod keeps, of a Pod, what the controllers read, and clears the rest:
//
//   - metadata whole but the managed fields;
//   - the spec whole but: of each container and init container only the
//     name, resources, restart policy (sidecars) and host ports; no
//     ephemeral containers; of the volumes only those that constrain where
//     the pod runs or count as local storage (claims, generic ephemeral
//     volumes, emptyDirs, hostPaths and any other kind but the four that
//     only project API data: secrets, config maps, projected and downward
//     API volumes, such as the service account token every pod carries);
//   - of the status: phase, the PodScheduled condition (the scheduler's
//     reason and message, read by provisioning and the hand-off), of the
//     Ready condition only its status and transition time (the pod
//     metrics), the nominated node, start time, reason and QoS class; no
//     other condition, no container statuses, IPs or resize state.
func (t *Trimmer) Pod(p *corev1.Pod) {
	p.ManagedFields = nil
	p.Spec.Containers = trimContainers(p.Spec.Containers)
	p.Spec.InitContainers = trimContainers(p.Spec.InitContainers)
	p.Spec.EphemeralContainers = nil
	p.Spec.Volumes = trimVolumes(p.Spec.Volumes)
	var kept []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled:
			kept = append(kept, c)
		case corev1.PodReady:
			kept = append(kept, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
		}
	}
	p.Status = corev1.PodStatus{
		Phase:             p.Status.Phase,
		Conditions:        kept,
		NominatedNodeName: p.Status.NominatedNodeName,
		StartTime:         p.Status.StartTime,
		Reason:            p.Status.Reason,
		QOSClass:          p.Status.QOSClass,
	}
	t.sh.pod(p)
}

// trimContainers keeps of each container what containersKey (share.go)
// spells out: a field kept here must be in that key too, or containers
// that differ in it would be shared.
func trimContainers(in []corev1.Container) []corev1.Container {
	if len(in) == 0 {
		return in
	}
	out := make([]corev1.Container, len(in))
	for i := range in {
		c := &in[i]
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				out[i].Ports = append(out[i].Ports, port)
			}
		}
	}
	return out
}

// trimVolumes drops the volumes that only project API data into the pod
// (secrets, config maps, projected and downward API volumes): they say
// nothing about where it can run. Nil when none is left.
func trimVolumes(in []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range in {
		if v.Secret != nil || v.ConfigMap != nil || v.Projected != nil || v.DownwardAPI != nil {
			continue
		}
		out = append(out, v)
	}
	return out
}

// Node keeps, of a Node, metadata (but managed fields) and spec whole, and
// of the status the capacity, allocatable, conditions, addresses, phase and
// boot id (a reboot for repair ends when it changes); images, the rest of
// the node info, daemon endpoints, volumes in use and the kubelet's config
// are cleared.
func (t *Trimmer) Node(n *corev1.Node) {
	n.ManagedFields = nil
	n.Status = corev1.NodeStatus{
		Capacity:    n.Status.Capacity,
		Allocatable: n.Status.Allocatable,
		Conditions:  n.Status.Conditions,
		Addresses:   n.Status.Addresses,
		Phase:       n.Status.Phase,
		NodeInfo:    corev1.NodeSystemInfo{BootID: n.Status.NodeInfo.BootID},
	}
	t.sh.node(n)
}

// ErrTrimmedWrite is returned by a Guard client for a write that would
// send a whole cached Pod or Node (an Update, a whole-object merge patch
// or an apply): the trimmed fields would be wiped on the server.
var ErrTrimmedWrite = errors.New("cachetrim: a Pod or Node read from the cache is trimmed; write it with a patch of the fields that change (client.MergeFrom), never an Update")

// Guard wraps a client so that writes of whole Pods or Nodes are refused
// with ErrTrimmedWrite: Update (of the object or any subresource), and
// Patch with client.Merge or an apply patch. Patches computed from a
// copy (client.MergeFrom, raw patches) and every other kind pass through.
func Guard(c client.Client) client.Client { return guarded{c} }

// NewClient is a client.NewClientFunc building the manager's client with
// Guard around it.
func NewClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	return Guard(c), nil
}

func trimmed(obj client.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.Node:
		return true
	}
	return false
}

func wholeObject(patch client.Patch) bool {
	return patch == client.Merge || patch == client.Apply || patch.Type() == types.ApplyPatchType || patch.Type() == types.ApplyCBORPatchType
}

func refuse(verb string, obj client.Object) error {
	return fmt.Errorf("%s %T %s/%s: %w", verb, obj, obj.GetNamespace(), obj.GetName(), ErrTrimmedWrite)
}

type guarded struct{ client.Client }

func (g guarded) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if trimmed(obj) {
		return refuse("update", obj)
	}
	return g.Client.Update(ctx, obj, opts...)
}

func (g guarded) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if trimmed(obj) && wholeObject(patch) {
		return refuse("whole-object patch of", obj)
	}
	return g.Client.Patch(ctx, obj, patch, opts...)
}

func (g guarded) Status() client.SubResourceWriter { return guardedWriter{g.Client.Status()} }

func (g guarded) SubResource(name string) client.SubResourceClient {
	return guardedSubResource{g.Client.SubResource(name), guardedWriter{g.Client.SubResource(name)}}
}

type guardedWriter struct{ client.SubResourceWriter }

func (w guardedWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if trimmed(obj) {
		return refuse("update of a subresource of", obj)
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w guardedWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if trimmed(obj) && wholeObject(patch) {
		return refuse("whole-object patch of a subresource of", obj)
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

type guardedSubResource struct {
	client.SubResourceClient
	w guardedWriter
}

func (s guardedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.w.Update(ctx, obj, opts...)
}

func (s guardedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.w.Patch(ctx, obj, patch, opts...)
}
