package snapshot

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// ReplacedByAnnotationKey marks a NodeClaim whose node is being replaced
// (a rebalance recommendation on an opted-in NodePool): its value lists the
// replacement NodeClaims, comma-separated. While it is set, the node is
// treated as going away (nothing new is planned onto it).
const ReplacedByAnnotationKey = "dovetail.sh/replaced-by"

// transientTaints are the taints a node carries only until its NodeClaim
// is initialized.
var transientTaints = []string{
	karpv1.UnregisteredTaintKey,
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	"node.cloudprovider.kubernetes.io/uninitialized",
}

// IsTransientTaint reports whether a node carries taints with this key only
// until its NodeClaim is initialized (unregistered, not-ready, unreachable,
// the cloud provider's uninitialized taint).
func IsTransientTaint(key string) bool { return slices.Contains(transientTaints, key) }

// Nomination is where a pod was planned to go by an earlier pass: an
// in-flight NodeClaim (held while it launches) or an existing node (held
// until Until).
type Nomination struct {
	// Target names the NodeClaim (InFlight) or the node.
	Target   string
	InFlight bool
	Until    time.Time
	// Evacuee: planned while bound to a node being replaced (a
	// replacement's reservation, which outlives the binding); otherwise
	// the pod was pending, and its binding anywhere ends the nomination.
	Evacuee bool
}

// ViewInput is what a reader of the cluster holds: the objects as listed
// and what it remembers between passes. View never modifies it.
type ViewInput struct {
	// Now is the time the view is for (nomination expiry).
	Now        time.Time
	Nodes      []*corev1.Node
	NodeClaims []*karpv1.NodeClaim
	Pods       []*corev1.Pod
	// Nominations are the remembered plans of pods, by UID.
	Nominations map[types.UID]Nomination
	// HandedOff is when a pod was handed to the kube-scheduler (its
	// status.nominatedNodeName set by provisioning); such a nomination
	// holds room only for NominationTTL. The scheduler's own nominations
	// (not handed off) always hold.
	HandedOff     map[types.UID]time.Time
	NominationTTL time.Duration
	// Evacuating are nodes being replaced: they take no new pods, and
	// their movable pods with a nomination count where they were planned.
	Evacuating map[string]bool
	// Evacuate are nodes whose movable pods are planned as if pending in
	// this pass (they are evacuating too).
	Evacuate map[string]bool
}

// View is the cluster as a snapshot should see it.
type View struct {
	// Nodes are the input's nodes, copied where changed (see NodeView).
	Nodes []*corev1.Node
	// Pods are the pods the snapshot takes: bound pods (where they are),
	// pods relocated to where they were nominated, pods of evacuated
	// nodes unbound, and pending pods. Terminal pods, pods being deleted
	// and DaemonSet pods that are not bound are left out.
	Pods []*corev1.Pod
	// Placed are the pods of Pods whose place in the view is not their
	// object's: nominated to an in-flight NodeClaim (InFlight) or counted
	// on a node. The pods themselves are the input's, not copies (a copy
	// of every nominated pod was, in a 30,000-pod burst, some 70 MB a
	// pass); Place reads a pod's place in the view. Build takes it as
	// Cluster.Placed.
	Placed map[*corev1.Pod]Nomination
	// Pending are the pods to place (copies where changed), by
	// namespace/name: pods waiting for capacity and the pods of Evacuate.
	Pending map[engine.PodRef]*corev1.Pod
	// Evacuated are the pods moved off Evacuate nodes.
	Evacuated map[engine.PodRef]bool
	// InFlight are the NodeClaims still launching: not being deleted, no
	// node among the input's.
	InFlight map[string]bool
	// NodeOfClaim maps a NodeClaim to its node (matched by provider ID).
	NodeOfClaim map[string]string
	// Evacuating are the nodes being replaced: the input's, Evacuate and
	// nodes whose NodeClaim has ReplacedByAnnotationKey.
	Evacuating map[string]bool
	// Waiting counts pods waiting for capacity (pending, nominated, or
	// held by a scheduler nomination); Nominated those of them nominated
	// to an in-flight NodeClaim.
	Waiting, Nominated int
	// Dropped are the nominations that no longer hold (expired, their
	// NodeClaim launched or gone, their node gone, their pod bound, or
	// superseded by a scheduler nomination); the caller forgets them.
	Dropped []types.UID
	// Live are the pods that are not terminal; NodeNames the input's
	// nodes.
	Live      map[types.UID]bool
	NodeNames map[string]bool
}

// NewView reads in the way provisioning and disruption both need it:
//
//   - a node whose NodeClaim is not initialized gets the NodeClaim's labels
//     and loses its transient and startup taints (NodeView);
//   - a node being evacuated (in.Evacuating, in.Evacuate, or its NodeClaim
//     has ReplacedByAnnotationKey) or leaving (it or its NodeClaim being
//     deleted) gets the karpenter.sh/disrupted:NoSchedule taint, so it
//     takes no new pods (Build then marks it for deletion);
//   - nominations expire: one to a node at Until, one to an in-flight
//     NodeClaim when the NodeClaim is no longer in flight, one to a node
//     that is gone at once, and a pending pod's nomination once it is
//     bound (only an evacuee's outlives its binding, while its node is
//     evacuating);
//   - a movable pod of an evacuating node counts where it was nominated,
//     or, on an Evacuate node, pending (Evacuated); other bound pods stay;
//   - an unbound pod with status.nominatedNodeName on an existing node
//     counts there while the nomination holds room (HandedOff); one with a
//     provisioning nomination counts where it was nominated; one waiting
//     for capacity (WaitsForCapacity) is pending, and so is one the
//     kube-scheduler has not tried yet whose controller has a pod waiting
//     for capacity (Untried: in a burst the scheduler marks the pods of a
//     scale-up one by one, and a loaded one takes a minute over 500; each
//     batch planned alone launches many small nodes where one plan of the
//     whole burst needs fewer, larger ones).
func NewView(in ViewInput) *View {
	v := &View{
		Pending: map[engine.PodRef]*corev1.Pod{}, Evacuated: map[engine.PodRef]bool{},
		InFlight: map[string]bool{}, NodeOfClaim: map[string]string{},
		Evacuating: make(map[string]bool, len(in.Evacuating)+len(in.Evacuate)),
		Live:       make(map[types.UID]bool, len(in.Pods)), NodeNames: make(map[string]bool, len(in.Nodes)),
		Nodes: make([]*corev1.Node, 0, len(in.Nodes)), Pods: make([]*corev1.Pod, 0, len(in.Pods)),
	}
	for n := range in.Evacuating {
		v.Evacuating[n] = true
	}
	for n := range in.Evacuate {
		v.Evacuating[n] = true
	}
	claimByProviderID := map[string]*karpv1.NodeClaim{}
	for _, nc := range in.NodeClaims {
		if nc.Status.ProviderID != "" {
			claimByProviderID[nc.Status.ProviderID] = nc
		}
	}
	for _, n := range in.Nodes {
		v.NodeNames[n.Name] = true
		nc := claimByProviderID[n.Spec.ProviderID]
		if nc != nil {
			v.NodeOfClaim[nc.Name] = n.Name
			if nc.Annotations[ReplacedByAnnotationKey] != "" {
				v.Evacuating[n.Name] = true
			}
		}
		// A node on its way out (its NodeClaim or itself being deleted)
		// takes no new pods, like one being evacuated; the pods bound to it
		// stay where they are until termination evicts them.
		leaving := n.DeletionTimestamp != nil || (nc != nil && nc.DeletionTimestamp != nil)
		v.Nodes = append(v.Nodes, NodeView(n, nc, v.Evacuating[n.Name] || leaving))
	}
	for _, nc := range in.NodeClaims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if node := nc.Status.NodeName; node != "" && v.NodeNames[node] {
			continue
		}
		if _, ok := v.NodeOfClaim[nc.Name]; ok {
			continue
		}
		v.InFlight[nc.Name] = true
	}

	// The controllers with a pod waiting for capacity: their untried pods
	// are pending too.
	short := map[types.UID]bool{}
	for _, pod := range in.Pods {
		if WaitsForCapacity(pod) {
			if o := OwnerOf(pod); o != "" {
				short[o] = true
			}
		}
	}
	for _, pod := range in.Pods {
		if terminal(pod) {
			continue
		}
		v.Live[pod.UID] = true
		ref := engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}
		t, hasNom := in.Nominations[pod.UID]
		drop := func() {
			if hasNom {
				v.Dropped = append(v.Dropped, pod.UID)
				hasNom = false
			}
		}
		switch {
		case hasNom && !t.InFlight && !in.Now.Before(t.Until):
			drop()
		case hasNom && t.InFlight && !v.InFlight[t.Target]:
			// The NodeClaim launched (its node now counts) or went away.
			drop()
		case hasNom && !t.InFlight && !v.NodeNames[t.Target]:
			drop()
		}
		switch {
		case pod.Spec.NodeName != "":
			if hasNom && (!t.Evacuee || !v.Evacuating[pod.Spec.NodeName] || t.Target == pod.Spec.NodeName) {
				// The pod was planned while pending and is now bound
				// (wherever the scheduler put it): done. Only a
				// replacement's reservation outlives the binding.
				drop()
			}
			if !v.Evacuating[pod.Spec.NodeName] || !Movable(pod) {
				v.Pods = append(v.Pods, pod)
				continue
			}
			switch {
			case hasNom:
				v.place(pod, t)
			case in.Evacuate[pod.Spec.NodeName]:
				cp := relocated(pod, Nomination{})
				v.Pending[ref] = cp
				v.Evacuated[ref] = true
				v.Pods = append(v.Pods, cp)
			default:
				v.Pods = append(v.Pods, pod)
			}
		case pod.DeletionTimestamp != nil || controlledByDaemonSet(pod):
			// neither pending nor using capacity
		case pod.Status.NominatedNodeName != "" && v.NodeNames[pod.Status.NominatedNodeName] && reserves(in, pod.UID):
			// The scheduler holds room for it on that node (its own
			// preemption, or a recent hand-off): count it there.
			drop()
			v.Waiting++
			v.place(pod, Nomination{Target: pod.Status.NominatedNodeName})
		case hasNom:
			v.Waiting++
			if t.InFlight {
				v.Nominated++
			}
			v.place(pod, t)
		case WaitsForCapacity(pod), Untried(pod) && short[OwnerOf(pod)]:
			v.Waiting++
			v.Pending[ref] = pod
			v.Pods = append(v.Pods, pod)
		}
	}
	return v
}

// Untried reports whether the kube-scheduler has not looked at an unbound
// pod yet: no PodScheduled condition and no scheduling gate (a gated pod
// waits for whoever holds the gate), not nominated, not being deleted, not
// finished and not a DaemonSet pod.
func Untried(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" || len(pod.Spec.SchedulingGates) > 0 ||
		pod.DeletionTimestamp != nil || terminal(pod) || controlledByDaemonSet(pod) {
		return false
	}
	return !slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
}

// reserves reports whether a pod's status.nominatedNodeName still holds
// room: it was not handed off by provisioning (the scheduler's own), or
// less than NominationTTL ago.
func reserves(in ViewInput, uid types.UID) bool {
	at, ok := in.HandedOff[uid]
	return !ok || in.Now.Sub(at) < in.NominationTTL
}

// NodeView is the node as a snapshot should see it: a node whose NodeClaim
// is not initialized yet gets the NodeClaim's labels (those it lacks) and
// loses the taints it will shed (transient and startup taints), or every
// pod planned onto its NodeClaim would look homeless the moment it
// registers; a node being evacuated gets the karpenter.sh/disrupted
// NoSchedule taint, so nothing new is planned onto it. Other nodes are
// returned as they are; n is never modified.
func NodeView(n *corev1.Node, nc *karpv1.NodeClaim, evacuating bool) *corev1.Node {
	initializing := nc != nil && !nc.IsTrue(karpv1.ConditionTypeInitialized)
	if !initializing && !evacuating {
		return n
	}
	cp := n.DeepCopy()
	if initializing {
		if cp.Labels == nil {
			cp.Labels = map[string]string{}
		}
		for k, val := range nc.Labels {
			if _, ok := cp.Labels[k]; !ok {
				cp.Labels[k] = val
			}
		}
		cp.Spec.Taints = slices.DeleteFunc(cp.Spec.Taints, func(t corev1.Taint) bool {
			if IsTransientTaint(t.Key) {
				return true
			}
			return slices.ContainsFunc(nc.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
		})
	}
	if evacuating && !hasTaint(cp.Spec.Taints, karpv1.DisruptedTaintKey) {
		cp.Spec.Taints = append(cp.Spec.Taints, corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule})
	}
	return cp
}

// place adds pod to the view where t says (see Placed).
func (v *View) place(pod *corev1.Pod, t Nomination) {
	if v.Placed == nil {
		v.Placed = map[*corev1.Pod]Nomination{}
	}
	v.Placed[pod] = t
	v.Pods = append(v.Pods, pod)
}

// Place is where a pod is in a view or cluster whose Placed is placed:
// the node it is bound to (or counted on), else the in-flight NodeClaim it
// is nominated to; both empty for a pending pod.
func Place(pod *corev1.Pod, placed map[*corev1.Pod]Nomination) (node, nominated string) {
	t, ok := placed[pod]
	switch {
	case !ok:
		return pod.Spec.NodeName, pod.Status.NominatedNodeName
	case t.Target == "":
		return "", ""
	case t.InFlight:
		return "", t.Target
	}
	return t.Target, ""
}

// relocated returns a copy of pod placed where t says: nominated to an
// in-flight NodeClaim, or bound to an existing node; the zero Nomination
// unbinds it (pending). The copy is shallow: it shares every map, slice
// and pointer with pod (the cache's, read-only) and differs only in the
// two scalar fields set here.
func relocated(pod *corev1.Pod, t Nomination) *corev1.Pod {
	cp := new(corev1.Pod)
	*cp = *pod
	cp.Spec.NodeName = ""
	cp.Status.NominatedNodeName = ""
	switch {
	case t.Target == "":
	case t.InFlight:
		cp.Status.NominatedNodeName = t.Target
	default:
		cp.Spec.NodeName = t.Target
	}
	return cp
}

// WaitsForCapacity reports whether a pod waits for a node: the
// kube-scheduler marked it unschedulable (PodScheduled=False, reason
// Unschedulable), and it is not bound, not being deleted, not finished and
// not a DaemonSet pod. A nomination (status.nominatedNodeName) is not
// looked at.
func WaitsForCapacity(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || terminal(pod) || controlledByDaemonSet(pod) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// Movable reports whether a bound pod comes back elsewhere when its node
// goes: it has a controller that recreates it (not a DaemonSet), it is not
// a static or mirror pod, and it is neither finished nor being deleted.
func Movable(pod *corev1.Pod) bool {
	if terminal(pod) || pod.DeletionTimestamp != nil || controlledByDaemonSet(pod) {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind != "Node"
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// controlledByDaemonSet: the pod's controller is an apps DaemonSet.
func controlledByDaemonSet(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "DaemonSet" && strings.HasPrefix(owner.APIVersion, "apps/")
}
