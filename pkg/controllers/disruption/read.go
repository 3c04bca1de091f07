package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// replacedByAnnotationKey is provisioning's mark of a NodeClaim being
// replaced after a rebalance recommendation (its node is evacuating; the
// disrupted taint on it is not ours to lift).
const replacedByAnnotationKey = "dovetail.sh/replaced-by"

// state is one pass's reading of NodeClaims and Nodes. They are the
// cache's own objects (listed without copies, as everything the pass
// reads): read-only. A NodeClaim the pass changes before it writes it is
// swapped for a copy first (own).
type state struct {
	inSync      bool
	claims      []*karpv1.NodeClaim
	claimByName map[string]*karpv1.NodeClaim
	nodes       []*corev1.Node
	nodeByName  map[string]*corev1.Node
	// nodeOfClaim and claimOfNode pair NodeClaims and Nodes by providerID.
	nodeOfClaim map[string]*corev1.Node
	claimOfNode map[string]*karpv1.NodeClaim
	commands    []*active
}

// own swaps nc for a copy of it in s and returns the copy, which the
// caller may change.
func (s *state) own(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	cp := nc.DeepCopy()
	if s.claimByName[nc.Name] == nc {
		s.claimByName[nc.Name] = cp
	}
	if i := slices.Index(s.claims, nc); i >= 0 {
		s.claims[i] = cp
	}
	if n := s.nodeOfClaim[nc.Name]; n != nil && s.claimOfNode[n.Name] == nc {
		s.claimOfNode[n.Name] = cp
	}
	return cp
}

// nodeClaimReadWait is how long a pass waits for the cache to show the
// controller's own NodeClaim writes before it reads the API server.
const nodeClaimReadWait = 5 * time.Second

// fast lists the cache's objects without copying them: what a pass reads
// is read-only (see state).
var fast = client.UnsafeDisableDeepCopy

func (s *state) poolOfNode(node string) string {
	if nc := s.claimOfNode[node]; nc != nil {
		return nodeclaimutil.NodePool(nc)
	}
	if n := s.nodeByName[node]; n != nil {
		return n.Labels[karpv1.NodePoolLabelKey]
	}
	return ""
}

// active is a command found in the cluster.
type active struct {
	cmd          commandState
	candidates   []*karpv1.NodeClaim // those still present
	replacements map[string]*karpv1.NodeClaim
}

func (c *Controller) read(ctx context.Context) (*state, error) {
	st := &state{
		claimByName: map[string]*karpv1.NodeClaim{}, nodeByName: map[string]*corev1.Node{},
		nodeOfClaim: map[string]*corev1.Node{}, claimOfNode: map[string]*karpv1.NodeClaim{},
	}
	// A replacement created by the previous pass must be seen, or it would
	// look lost, and so must every annotation of a command: NodeClaims come
	// from the cache once it shows every NodeClaim write of the
	// controller's, else from the API server.
	var claims karpv1.NodeClaimList
	if _, err := c.writes.List(ctx, c.kube, c.apiReader, &claims, nodeClaimReadWait, fast); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kube.List(ctx, &nodes, fast); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	byProviderID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		st.nodes = append(st.nodes, n)
		st.nodeByName[n.Name] = n
		if n.Spec.ProviderID != "" {
			byProviderID[n.Spec.ProviderID] = n
		}
	}
	st.inSync = true
	byID := map[string]*active{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		st.claims = append(st.claims, nc)
		st.claimByName[nc.Name] = nc
		if n := byProviderID[nc.Status.ProviderID]; n != nil && nc.Status.ProviderID != "" {
			st.nodeOfClaim[nc.Name] = n
			st.claimOfNode[n.Name] = nc
		} else if nc.Status.NodeName != "" && nc.DeletionTimestamp == nil {
			st.inSync = false // the cache has not seen its Node yet
		}
		if raw, ok := nc.Annotations[CommandAnnotationKey]; ok {
			var cs commandState
			if err := json.Unmarshal([]byte(raw), &cs); err != nil || cs.ID == "" {
				cs = commandState{ID: "malformed-" + nc.Name, NodeClaims: []string{nc.Name}}
			}
			a := byID[cs.ID]
			if a == nil {
				a = &active{cmd: cs, replacements: map[string]*karpv1.NodeClaim{}}
				byID[cs.ID] = a
			}
			a.candidates = append(a.candidates, nc)
		}
	}
	for _, nc := range st.claims {
		if id := nc.Labels[CommandLabelKey]; id != "" {
			if a := byID[id]; a != nil {
				a.replacements[nc.Name] = nc
			}
		}
	}
	for _, a := range byID {
		st.commands = append(st.commands, a)
	}
	sort.Slice(st.commands, func(i, j int) bool { return st.commands[i].cmd.ID < st.commands[j].cmd.ID })
	return st, nil
}

// typeSource serves the instance types read for each pool in this pass.
type typeSource map[string][]*cloudprovider.InstanceType

func (s typeSource) InstanceTypes(np *karpv1.NodePool, _ *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	return s[np.Name], nil
}

// world is what a plan was made from, for acting on it.
type world struct {
	pools map[string]*karpv1.NodePool
	types typeSource
	// pods are the pods listed, by namespace/name (their owners, for a
	// command's destinations).
	pods map[engine.PodRef]*corev1.Pod
}

// input reads the rest of the cluster and builds the planner's input.
func (c *Controller) input(ctx context.Context, st *state, now time.Time) (*planner.Input, *world, error) {
	sc := &snapshot.Cluster{}
	w := &world{pools: map[string]*karpv1.NodePool{}, types: typeSource{}, pods: map[engine.PodRef]*corev1.Pod{}}
	var classes awsv1.EC2NodeClassList
	if err := c.kube.List(ctx, &classes, fast); err != nil {
		return nil, nil, fmt.Errorf("listing EC2NodeClasses: %w", err)
	}
	classByName := map[string]bool{}
	for i := range classes.Items {
		sc.NodeClasses = append(sc.NodeClasses, &classes.Items[i])
		classByName[classes.Items[i].Name] = true
	}
	var pools karpv1.NodePoolList
	if err := c.kube.List(ctx, &pools, fast); err != nil {
		return nil, nil, fmt.Errorf("listing NodePools: %w", err)
	}
	in := &planner.Input{Now: now, Pools: map[string]planner.PoolPolicy{}, Nodes: map[string]planner.NodeState{},
		RepairPolicies: c.cloud.RepairPolicies(),
		Options: planner.Options{SpotToSpotConsolidation: c.opts.SpotToSpotConsolidation, NodeRepair: c.opts.NodeRepair,
			TerminateFirstDrift: c.opts.TerminateFirstDrift, TerminateFirstRepair: c.opts.TerminateFirstRepair,
			MinSavings: c.opts.MinSavings, Engine: c.opts.Snapshot.Engine}}
	for i := range pools.Items {
		np := &pools.Items[i]
		if np.DeletionTimestamp != nil || !np.IsTrue(karpv1.ConditionTypeReady) ||
			np.Spec.Template.Spec.NodeClassRef == nil || !classByName[np.Spec.Template.Spec.NodeClassRef.Name] {
			continue
		}
		its, err := c.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			continue // provisioning reports it; its nodes are kept (no pool)
		}
		w.pools[np.Name] = np
		w.types[np.Name] = its
		sc.NodePools = append(sc.NodePools, np)
		in.Pools[np.Name] = snapshot.DisruptionPolicy(np)
		c.reportMinSavings(ctx, np)
	}
	if c.opts.NodeOverlays {
		overlays, err := nodeclaimutil.ListNodeOverlays(ctx, c.kube)
		if err != nil {
			return nil, nil, err
		}
		adjusted, _ := snapshot.ApplyOverlays(overlays, sc.NodePools, w.types)
		w.types = typeSource(adjusted)
	}
	sc.NodeClaims = st.claims
	// The hold on replacements is for the kube-scheduler only: the planner
	// sees them as the nodes they will be once it is lifted.
	for _, n := range st.nodes {
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == HoldTaintKey }) {
			n = n.DeepCopy()
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == HoldTaintKey })
		}
		sc.Nodes = append(sc.Nodes, n)
	}
	pods, err := nodeclaimutil.ListPods(ctx, c.podStore, c.kube)
	if err != nil {
		return nil, nil, fmt.Errorf("listing Pods: %w", err)
	}
	if pods, err = nodeclaimutil.ApplySpreadDefaults(ctx, c.kube, c.opts.SpreadDefaults, pods); err != nil {
		log.FromContext(ctx).Error(err, "planning with the default spreads deduced from what could be read")
	}
	nominated := map[string]int{}
	for _, p := range pods {
		sc.Pods = append(sc.Pods, p)
		w.pods[engine.PodRef{Namespace: p.Namespace, Name: p.Name}] = p
		if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" {
			nominated[p.Status.NominatedNodeName]++
		}
	}
	var dss appsv1.DaemonSetList
	if err := c.kube.List(ctx, &dss, fast); err != nil {
		return nil, nil, fmt.Errorf("listing DaemonSets: %w", err)
	}
	for i := range dss.Items {
		sc.DaemonSets = append(sc.DaemonSets, &dss.Items[i])
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.kube.List(ctx, &pvcs, fast); err != nil {
		return nil, nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	for i := range pvcs.Items {
		sc.PersistentVolumeClaims = append(sc.PersistentVolumeClaims, &pvcs.Items[i])
	}
	var pvs corev1.PersistentVolumeList
	if err := c.kube.List(ctx, &pvs, fast); err != nil {
		return nil, nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	for i := range pvs.Items {
		sc.PersistentVolumes = append(sc.PersistentVolumes, &pvs.Items[i])
	}
	var scs storagev1.StorageClassList
	if err := c.kube.List(ctx, &scs, fast); err != nil {
		return nil, nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	for i := range scs.Items {
		sc.StorageClasses = append(sc.StorageClasses, &scs.Items[i])
	}
	var nss corev1.NamespaceList
	if err := c.kube.List(ctx, &nss, fast); err != nil {
		return nil, nil, fmt.Errorf("listing Namespaces: %w", err)
	}
	for i := range nss.Items {
		sc.Namespaces = append(sc.Namespaces, &nss.Items[i])
	}
	if c.unavailable != nil {
		for _, e := range c.unavailable.List() {
			sc.Unavailable = append(sc.Unavailable, engine.OfferingKey(e.Offering))
		}
	}
	cm, err := nodeclaimutil.ReadCommitments(ctx, c.apiReader, c.opts.CommitmentsNamespace)
	if err != nil {
		// Planned as without commitments; the error names the field.
		log.FromContext(ctx).Error(err, "commitments not applied")
	}
	sc.Commitments = cm
	if c.opts.CapacityBuffers {
		// The buffers' room is planned as pending pods: an empty node that
		// holds it is kept (CapacityBuffer), a node is consolidated only
		// if the room fits elsewhere.
		var cbs autoscalingv1beta1.CapacityBufferList
		if err := c.kube.List(ctx, &cbs); err != nil {
			return nil, nil, fmt.Errorf("listing CapacityBuffers: %w", err)
		}
		var pts corev1.PodTemplateList
		if len(cbs.Items) > 0 {
			if err := c.kube.List(ctx, &pts); err != nil {
				return nil, nil, fmt.Errorf("listing PodTemplates: %w", err)
			}
		}
		for i := range cbs.Items {
			sc.CapacityBuffers = append(sc.CapacityBuffers, &cbs.Items[i])
		}
		for i := range pts.Items {
			sc.PodTemplates = append(sc.PodTemplates, &pts.Items[i])
		}
	}
	cluster, err := snapshot.Build(sc, w.types, c.opts.Snapshot)
	if err != nil {
		return nil, nil, fmt.Errorf("building the snapshot: %w", err)
	}
	in.Cluster = cluster

	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.kube.List(ctx, &pdbs, fast); err != nil {
		return nil, nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	for i := range pdbs.Items {
		pdb := &pdbs.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			sel = nil
		}
		in.PDBs = append(in.PDBs, planner.PDB{Namespace: pdb.Namespace, Name: pdb.Name, Selector: sel, DisruptionsAllowed: pdb.Status.DisruptionsAllowed})
	}

	// Replacements of a command whose candidates are still draining hold
	// their pods' room: nominated, so they are not consolidated under them.
	draining := map[string]int{}
	for _, a := range st.commands {
		for name := range a.replacements {
			draining[name] = len(a.candidates)
		}
	}
	for _, n := range st.nodes {
		nc := st.claimOfNode[n.Name]
		if nc == nil {
			continue
		}
		in.Nodes[n.Name] = c.nodeState(n, nc, now, nominated[n.Name], draining[nc.Name] > 0)
	}
	return in, w, nil
}

// reportMinSavings warns, on the NodePool and in the log, when its
// consolidation savings annotations do not parse (the planner then uses
// the controller's value); once per NodePool and message.
func (c *Controller) reportMinSavings(ctx context.Context, np *karpv1.NodePool) {
	_, err := snapshot.PoolMinSavings(np)
	if err == nil {
		delete(c.badMinSavings, np.Name)
		return
	}
	if c.badMinSavings[np.Name] == err.Error() {
		return
	}
	c.badMinSavings[np.Name] = err.Error()
	log.FromContext(ctx).Info("invalid consolidation savings annotation; using the controller's value", "nodepool", np.Name, "error", err.Error())
	c.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonInvalidMinSavings, "Plan", "%s", err.Error())
}

// nodeState is what the planner needs to know about a managed node: what
// its objects say (nodeclaimutil.PlannerState, shared with pod deletion
// costs), its reboots and its nominations.
func (c *Controller) nodeState(n *corev1.Node, nc *karpv1.NodeClaim, now time.Time, nominatedPods int, draining bool) planner.NodeState {
	s := nodeclaimutil.PlannerState(n, nc)
	s.Rebooting, s.RepairReboots, s.LastReboot = rebootState(nc)
	if nominatedPods > 0 || draining {
		s.NominatedUntil = now.Add(c.opts.Interval)
		s.NominatedPods = nominatedPods
	}
	return s
}

func hasDisruptedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}
