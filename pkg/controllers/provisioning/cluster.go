package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// ReplacedByAnnotationKey marks a NodeClaim whose node is being replaced
// (a rebalance recommendation on an opted-in NodePool): its value lists the
// replacement NodeClaims, comma-separated. While it is set, the node is
// treated as going away (nothing new is planned onto it).
const ReplacedByAnnotationKey = "dovetail.sh/replaced-by"

// Taints a node carries only until its NodeClaim is initialized; the
// snapshot ignores them on such nodes, as the node will shed them.
var transientTaints = []string{
	karpv1.UnregisteredTaintKey,
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	"node.cloudprovider.kubernetes.io/uninitialized",
}

// view is one pass's reading of the cluster.
type view struct {
	cluster *snapshot.Cluster
	// pools are the NodePools given to the engine, by name.
	pools map[string]*karpv1.NodePool
	// types are their instance types, by pool.
	types map[string][]*cloudprovider.InstanceType
	// skipped are NodePools left out, with why.
	skipped map[string]string
	// pending are the pods to place (copies where changed), by namespace/name.
	pending map[engine.PodRef]*corev1.Pod
	// waiting counts pods waiting for capacity: pending plus nominated to
	// an in-flight NodeClaim.
	waiting, nominated int
	// evacuated are the pods moved off nodes being replaced in this pass.
	evacuated map[engine.PodRef]bool
	// inFlight are the names of NodeClaims still launching.
	inFlight map[string]bool
	// nodeOfClaim maps a NodeClaim name to its node's name, when it has one.
	nodeOfClaim map[string]string
}

// read lists what the snapshot needs. evacuate names nodes whose movable
// pods are to be planned as if pending (for Replace).
func (p *Provisioner) read(ctx context.Context, evacuate map[string]bool) (*view, error) {
	now := p.clock.Now()
	v := &view{
		cluster: &snapshot.Cluster{}, pools: map[string]*karpv1.NodePool{}, types: map[string][]*cloudprovider.InstanceType{},
		skipped: map[string]string{}, pending: map[engine.PodRef]*corev1.Pod{}, evacuated: map[engine.PodRef]bool{},
		inFlight: map[string]bool{}, nodeOfClaim: map[string]string{},
	}
	c := v.cluster
	fast := client.UnsafeDisableDeepCopy

	var classes awsv1.EC2NodeClassList
	if err := p.kube.List(ctx, &classes, fast); err != nil {
		return nil, fmt.Errorf("listing EC2NodeClasses: %w", err)
	}
	classByName := map[string]bool{}
	for i := range classes.Items {
		c.NodeClasses = append(c.NodeClasses, &classes.Items[i])
		classByName[classes.Items[i].Name] = true
	}

	var pools karpv1.NodePoolList
	if err := p.kube.List(ctx, &pools, fast); err != nil {
		return nil, fmt.Errorf("listing NodePools: %w", err)
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		switch {
		case np.DeletionTimestamp != nil:
			v.skipped[np.Name] = "it is being deleted"
			continue
		case !np.IsTrue(karpv1.ConditionTypeReady):
			v.skipped[np.Name] = "it is not Ready"
			continue
		case np.Spec.Template.Spec.NodeClassRef == nil || !classByName[np.Spec.Template.Spec.NodeClassRef.Name]:
			v.skipped[np.Name] = "its EC2NodeClass does not exist"
			continue
		}
		its, err := p.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			v.skipped[np.Name] = fmt.Sprintf("its instance types are unknown: %v", err)
			continue
		}
		v.pools[np.Name] = np
		v.types[np.Name] = its
		c.NodePools = append(c.NodePools, np)
	}

	var claims karpv1.NodeClaimList
	// NodeClaims are read from the API server, not the cache: a NodeClaim
	// created by the previous pass must be seen, or its pods would be
	// planned again.
	if err := p.apiReader.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	claimByProviderID := map[string]*karpv1.NodeClaim{}
	claimByName := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		c.NodeClaims = append(c.NodeClaims, nc)
		claimByName[nc.Name] = nc
		if nc.Status.ProviderID != "" {
			claimByProviderID[nc.Status.ProviderID] = nc
		}
	}

	var nodes corev1.NodeList
	if err := p.kube.List(ctx, &nodes, fast); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	nodeNames := map[string]bool{}
	nodeByName := map[string]*corev1.Node{}
	p.mem.mu.Lock()
	evacuating := map[string]bool{}
	for n := range p.mem.evacuating {
		evacuating[n] = true
	}
	p.mem.mu.Unlock()
	for n := range evacuate {
		evacuating[n] = true
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		nodeNames[n.Name] = true
		nc := claimByProviderID[n.Spec.ProviderID]
		if nc != nil {
			v.nodeOfClaim[nc.Name] = n.Name
			if nc.Annotations[ReplacedByAnnotationKey] != "" {
				evacuating[n.Name] = true
			}
		}
		// A node on its way out (its NodeClaim or itself being deleted)
		// takes no new pods, like one being evacuated; the pods bound to it
		// stay where they are until termination evicts them.
		leaving := n.DeletionTimestamp != nil || (nc != nil && nc.DeletionTimestamp != nil)
		n = nodeView(n, nc, evacuating[n.Name] || leaving)
		nodeByName[n.Name] = n
		c.Nodes = append(c.Nodes, n)
	}
	for _, nc := range claimByName {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if node := nc.Status.NodeName; node != "" && nodeNames[node] {
			continue
		}
		if _, ok := v.nodeOfClaim[nc.Name]; ok {
			continue
		}
		v.inFlight[nc.Name] = true
	}

	var pods corev1.PodList
	if err := p.kube.List(ctx, &pods, fast); err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	live := make(map[types.UID]bool, len(pods.Items))
	p.mem.mu.Lock()
	for i := range pods.Items {
		pod := &pods.Items[i]
		if terminal(pod) {
			continue
		}
		live[pod.UID] = true
		ref := engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}
		t, hasNom := p.mem.noms[pod.UID]
		if hasNom && !t.inFlight && !now.Before(t.until) {
			delete(p.mem.noms, pod.UID)
			hasNom = false
		}
		if hasNom && t.inFlight && !v.inFlight[t.name] {
			// The NodeClaim launched (its node now counts) or went away.
			delete(p.mem.noms, pod.UID)
			hasNom = false
		}
		if hasNom && !t.inFlight && !nodeNames[t.name] {
			delete(p.mem.noms, pod.UID)
			hasNom = false
		}
		switch {
		case pod.Spec.NodeName != "":
			if hasNom && (!t.evacuee || !evacuating[pod.Spec.NodeName] || t.name == pod.Spec.NodeName) {
				// The pod was planned while pending and is now bound
				// (wherever the scheduler put it): done. Only a
				// replacement's reservation outlives the binding.
				delete(p.mem.noms, pod.UID)
				hasNom = false
			}
			if !evacuating[pod.Spec.NodeName] || !movable(pod) {
				c.Pods = append(c.Pods, pod)
				continue
			}
			switch {
			case hasNom:
				c.Pods = append(c.Pods, relocated(pod, t))
			case evacuate[pod.Spec.NodeName]:
				cp := relocated(pod, target{})
				v.pending[ref] = cp
				v.evacuated[ref] = true
				c.Pods = append(c.Pods, cp)
			default:
				c.Pods = append(c.Pods, pod)
			}
		case pod.DeletionTimestamp != nil || ownedByDaemonSet(pod):
			// neither pending nor using capacity
		case pod.Status.NominatedNodeName != "" && nodeNames[pod.Status.NominatedNodeName] && p.mem.reserves(pod.UID, now, p.opts.NominationTTL):
			// The scheduler holds room for it on that node (its own
			// preemption, or a recent hand-off): count it there.
			if hasNom {
				delete(p.mem.noms, pod.UID)
			}
			v.waiting++
			c.Pods = append(c.Pods, relocated(pod, target{name: pod.Status.NominatedNodeName}))
		case hasNom:
			v.waiting++
			if t.inFlight {
				v.nominated++
			}
			c.Pods = append(c.Pods, relocated(pod, t))
		case waitsForCapacity(pod):
			v.waiting++
			v.pending[ref] = pod
			c.Pods = append(c.Pods, pod)
		}
	}
	p.mem.mu.Unlock()
	p.mem.prune(live, nodeNames)

	var dss appsv1.DaemonSetList
	if err := p.kube.List(ctx, &dss, fast); err != nil {
		return nil, fmt.Errorf("listing DaemonSets: %w", err)
	}
	for i := range dss.Items {
		c.DaemonSets = append(c.DaemonSets, &dss.Items[i])
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := p.kube.List(ctx, &pvcs, fast); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	for i := range pvcs.Items {
		c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, &pvcs.Items[i])
	}
	var pvs corev1.PersistentVolumeList
	if err := p.kube.List(ctx, &pvs, fast); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	for i := range pvs.Items {
		c.PersistentVolumes = append(c.PersistentVolumes, &pvs.Items[i])
	}
	var scs storagev1.StorageClassList
	if err := p.kube.List(ctx, &scs, fast); err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	for i := range scs.Items {
		c.StorageClasses = append(c.StorageClasses, &scs.Items[i])
	}
	var nss corev1.NamespaceList
	if err := p.kube.List(ctx, &nss, fast); err != nil {
		return nil, fmt.Errorf("listing Namespaces: %w", err)
	}
	for i := range nss.Items {
		c.Namespaces = append(c.Namespaces, &nss.Items[i])
	}
	if p.unavailable != nil {
		for _, e := range p.unavailable.List() {
			c.Unavailable = append(c.Unavailable, engine.OfferingKey(e.Offering))
		}
	}
	return v, nil
}

// nodeView is the node as the snapshot should see it: a node whose
// NodeClaim is not initialized yet gets the NodeClaim's labels and loses the
// taints it will shed (unregistered, not-ready, the startup taints), or every
// pod planned onto its NodeClaim would look homeless the moment it
// registers; a node being replaced gets the disrupted taint, so nothing new
// is planned onto it. Other nodes are returned as they are.
func nodeView(n *corev1.Node, nc *karpv1.NodeClaim, evacuating bool) *corev1.Node {
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
			if slices.Contains(transientTaints, t.Key) {
				return true
			}
			return slices.ContainsFunc(nc.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
		})
	}
	if evacuating && !slices.ContainsFunc(cp.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
		cp.Spec.Taints = append(cp.Spec.Taints, corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule})
	}
	return cp
}

// relocated returns a copy of pod placed where t says: nominated to an
// in-flight NodeClaim, or bound to an existing node; the zero target
// unbinds it (pending).
func relocated(pod *corev1.Pod, t target) *corev1.Pod {
	cp := pod.DeepCopy()
	cp.Spec.NodeName = ""
	cp.Status.NominatedNodeName = ""
	switch {
	case t.name == "":
	case t.inFlight:
		cp.Status.NominatedNodeName = t.name
	default:
		cp.Spec.NodeName = t.name
	}
	return cp
}

// Provisionable reports whether a pod waits for capacity: the kube-scheduler
// marked it unschedulable (PodScheduled=False, reason Unschedulable), it is
// not bound, not nominated by the scheduler (preemption), not being
// deleted, not finished, and not a DaemonSet pod (those follow nodes, they
// never need one).
func Provisionable(pod *corev1.Pod) bool {
	return pod.Status.NominatedNodeName == "" && waitsForCapacity(pod)
}

// waitsForCapacity is Provisionable without the nomination check (read
// handles nominations to nodes that exist; one to a node that does not
// exist holds nothing).
func waitsForCapacity(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || terminal(pod) || ownedByDaemonSet(pod) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// movable reports whether a bound pod comes back elsewhere when its node
// goes: it has a controller that recreates it (not a DaemonSet), it is not
// a static or mirror pod, and it is neither finished nor being deleted.
func movable(pod *corev1.Pod) bool {
	if terminal(pod) || pod.DeletionTimestamp != nil || ownedByDaemonSet(pod) {
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

func ownedByDaemonSet(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "DaemonSet" && strings.HasPrefix(owner.APIVersion, "apps/")
}
