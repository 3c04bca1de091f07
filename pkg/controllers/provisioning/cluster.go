package provisioning

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// ReplacedByAnnotationKey marks a NodeClaim whose node is being replaced
// (a rebalance recommendation on an opted-in NodePool): its value lists the
// replacement NodeClaims, comma-separated. While it is set, the node is
// treated as going away (nothing new is planned onto it).
const ReplacedByAnnotationKey = snapshot.ReplacedByAnnotationKey

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
// nodeClaimReadWait is how long a pass waits for the cache to show the
// provisioner's own NodeClaim writes before it reads the API server.
const nodeClaimReadWait = 5 * time.Second

func (p *Provisioner) read(ctx context.Context, evacuate map[string]bool) (*view, error) {
	now := p.clock.Now()
	v := &view{
		cluster: &snapshot.Cluster{}, pools: map[string]*karpv1.NodePool{}, types: map[string][]*cloudprovider.InstanceType{},
		skipped: map[string]string{},
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
	if p.opts.NodeOverlays {
		overlays, err := nodeclaimutil.ListNodeOverlays(ctx, p.kube)
		if err != nil {
			return nil, err
		}
		v.types, _ = snapshot.ApplyOverlays(overlays, c.NodePools, v.types)
	}

	var claims karpv1.NodeClaimList
	// A NodeClaim created by the previous pass must be seen, or its pods
	// would be planned again: NodeClaims come from the cache once it shows
	// every NodeClaim write of the provisioner's, else from the API server.
	if _, err := p.writes.List(ctx, p.kube, p.apiReader, &claims, nodeClaimReadWait, fast); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	for i := range claims.Items {
		c.NodeClaims = append(c.NodeClaims, &claims.Items[i])
	}

	var nodes corev1.NodeList
	if err := p.kube.List(ctx, &nodes, fast); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	nodeList := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		nodeList[i] = &nodes.Items[i]
	}

	podList, err := p.listPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	// SCHEDULER_CONFIG's default spreads, on pending and bound pods alike
	// (bound pods are counted by the pending pods' constraints, and
	// Replace plans some of them again).
	if podList, err = nodeclaimutil.ApplySpreadDefaults(ctx, p.kube, p.opts.SpreadDefaults, podList); err != nil {
		p.log.Error(err, "planning with the default spreads deduced from what could be read")
	}
	// The pure part (nominations and their expiry, evacuated and leaving
	// nodes, relocated pods) is snapshot.NewView, shared with disruption.
	handed := p.mem.heldHandoffs(podList, now, handoffHold)
	byUID := make(map[types.UID]*corev1.Pod, len(podList))
	for _, pod := range podList {
		byUID[pod.UID] = pod
	}
	p.mem.mu.Lock()
	p.mem.extend(byUID, now, p.opts.NominationTTL, handoffHold)
	evacuating := make(map[string]bool, len(p.mem.evacuating))
	for n := range p.mem.evacuating {
		evacuating[n] = true
	}
	noms := make(map[types.UID]snapshot.Nomination, len(p.mem.noms))
	for uid, t := range p.mem.noms {
		noms[uid] = snapshot.Nomination{Target: t.name, InFlight: t.inFlight, Until: t.until, Evacuee: t.evacuee}
	}
	cv := snapshot.NewView(snapshot.ViewInput{
		Now: now, Nodes: nodeList, NodeClaims: c.NodeClaims, Pods: podList,
		Nominations: noms, HandedOff: handed, NominationTTL: p.opts.NominationTTL,
		Evacuating: evacuating, Evacuate: evacuate,
	})
	for _, uid := range cv.Dropped {
		delete(p.mem.noms, uid)
	}
	p.mem.mu.Unlock()
	p.mem.prune(cv.Live, cv.NodeNames)
	c.Nodes, c.Pods, c.Placed = cv.Nodes, cv.Pods, cv.Placed
	v.pending, v.evacuated, v.inFlight, v.nodeOfClaim = cv.Pending, cv.Evacuated, cv.InFlight, cv.NodeOfClaim
	v.waiting, v.nominated = cv.Waiting, cv.Nominated

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
	if p.opts.CapacityBuffers {
		if err := p.readBuffers(ctx, c); err != nil {
			return nil, err
		}
	}
	if p.unavailable != nil {
		for _, e := range p.unavailable.List() {
			c.Unavailable = append(c.Unavailable, engine.OfferingKey(e.Offering))
		}
	}
	cm, err := nodeclaimutil.ReadCommitments(ctx, p.apiReader, p.opts.CommitmentsNamespace)
	if err != nil {
		// Plans are made as without commitments; the error names the field.
		log.FromContext(ctx).Error(err, "commitments not applied")
	}
	c.Commitments = cm
	return v, nil
}

// Provisionable reports whether a pod waits for capacity: the kube-scheduler
// marked it unschedulable (PodScheduled=False, reason Unschedulable), it is
// not bound, not nominated by the scheduler (preemption), not being
// deleted, not finished, and not a DaemonSet pod (those follow nodes, they
// never need one).
func Provisionable(pod *corev1.Pod) bool {
	return pod.Status.NominatedNodeName == "" && snapshot.WaitsForCapacity(pod)
}

// IgnoredPod reports whether a pod refuses the nodes of every NodePool:
// each of its required node affinity terms asks for karpenter.sh/nodepool
// DoesNotExist (a pod kept off autoscaled nodes, such as a replica of the
// controller itself). Such pods are counted in
// karpenter_scheduler_ignored_pods_count; the plan gives them no node.
func IgnoredPod(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for _, term := range terms {
		refuses := false
		for _, e := range term.MatchExpressions {
			if e.Key == karpv1.NodePoolLabelKey && e.Operator == corev1.NodeSelectorOpDoesNotExist {
				refuses = true
			}
		}
		if !refuses {
			return false
		}
	}
	return len(terms) > 0
}
