package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// Reasons of the fence step (events; ReasonProviderIDInUse is also the
// Launched=False reason of the NodeClaim it deletes).
const (
	ReasonProviderIDInUse  = "ProviderIDInUse"
	ReasonNodeNameMismatch = "NodeNameMismatch"
)

// maxEcho is how much of a value from a NodeClaim's status (which anyone
// allowed to write it may fill with anything) a fence message repeats.
const maxEcho = 256

func echo(s string) string { return termtext.Escape(termtext.Clip(s, maxEcho)) }

// fence keeps a NodeClaim with an impossible status away from another
// claim's instance and node. dovetail writes status.providerID once, from
// the cloud's answer to this claim's launch, and status.nodeName from the
// Node with that providerID; a status that says otherwise was copied or
// written by hand:
//
//   - Two NodeClaims with one providerID: the rightful one is the claim
//     the instance was launched for (the cloud's Get names it: the AWS
//     provider reads the instance's karpenter.sh/nodeclaim tag), else the
//     one the Node's owner reference names, else the older (then the name
//     first in order). The other is an impostor: it is unlinked from the
//     node (its owner reference removed), its providerID and nodeName are
//     cleared, Launched=False/ProviderIDInUse says why, a Warning event
//     the same, and it is deleted. Its deletion terminates only an
//     instance tagged for it, never the rightful claim's node or instance.
//   - status.nodeName naming a Node whose providerID is not the claim's:
//     nodeName is cleared (and any owner reference the claim has on that
//     node removed), with a Warning event NodeNameMismatch; the claim is
//     otherwise left to the usual rules (registration links it to the node
//     of its own providerID, garbage collection deletes it when that
//     instance does not exist).
func (c *Controller) fence(ctx context.Context, st *state) (reconcile.Result, error) {
	nc := st.nc
	if nc.Status.ProviderID != "" {
		owner, why, err := c.rightfulOwner(ctx, nc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if owner != nil && owner.UID != nc.UID {
			return reconcile.Result{}, c.evict(ctx, st, owner, why)
		}
	}
	name := nc.Status.NodeName
	if name == "" {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // a deleted node is no contradiction
	}
	if node.Spec.ProviderID == "" || node.Spec.ProviderID == nc.Status.ProviderID {
		return reconcile.Result{}, nil
	}
	if err := c.unlink(ctx, nc.UID, node); err != nil {
		return reconcile.Result{}, err
	}
	msg := fmt.Sprintf("status.nodeName %s names a node with providerID %s, not this NodeClaim's providerID %q; clearing status.nodeName",
		echo(name), echo(node.Spec.ProviderID), echo(nc.Status.ProviderID))
	nc.Status.NodeName = ""
	ncCopy := nc.DeepCopy()
	st.onCommit = append(st.onCommit, func() {
		c.recorder.Eventf(ncCopy, nil, corev1.EventTypeWarning, ReasonNodeNameMismatch, "Fence", "%s", msg)
	})
	return reconcile.Result{}, nil
}

// rightfulOwner returns the NodeClaim the providerID of nc belongs to when
// another NodeClaim claims it too (nil when none does), and why it is that
// one.
func (c *Controller) rightfulOwner(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, string, error) {
	pid := nc.Status.ProviderID
	var list karpv1.NodeClaimList
	if err := c.kube.List(ctx, &list, client.MatchingFields{nodeclaimutil.IndexNodeClaimProviderID: pid}); err != nil {
		return nil, "", fmt.Errorf("listing nodeclaims with providerID %s: %w", echo(pid), err)
	}
	candidates := []*karpv1.NodeClaim{nc}
	for i := range list.Items {
		if other := &list.Items[i]; other.UID != nc.UID {
			candidates = append(candidates, other)
		}
	}
	if len(candidates) == 1 {
		return nil, "", nil
	}
	// The cloud knows which claim the instance was launched for.
	inst, err := c.cloud.Get(ctx, pid)
	switch {
	case err == nil && inst.Name != "":
		for _, cand := range candidates {
			if cand.Name == inst.Name {
				return cand, "the instance was launched for it", nil
			}
		}
	case err != nil && !cloudprovider.IsNodeClaimNotFound(err):
		return nil, "", fmt.Errorf("asking the cloud which NodeClaim instance %s belongs to: %w", echo(pid), err)
	}
	// The node registered for one of them.
	nodes, err := nodeclaimutil.NodesForProviderID(ctx, c.kube, pid)
	if err != nil {
		return nil, "", err
	}
	var referenced []*karpv1.NodeClaim
	for _, cand := range candidates {
		for i := range nodes {
			if ownerIndex(&nodes[i], cand) >= 0 {
				referenced = append(referenced, cand)
				break
			}
		}
	}
	if len(referenced) == 1 {
		return referenced[0], "its node's owner reference names it", nil
	}
	// The first to exist.
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i].CreationTimestamp, candidates[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return candidates[i].Name < candidates[j].Name
	})
	return candidates[0], "it is the older", nil
}

// evict unlinks an impostor from the rightful claim's node, clears its
// status, and deletes it.
func (c *Controller) evict(ctx context.Context, st *state, owner *karpv1.NodeClaim, why string) error {
	nc := st.nc
	pid := nc.Status.ProviderID
	nodes, err := nodeclaimutil.NodesForProviderID(ctx, c.kube, pid)
	if err != nil {
		return err
	}
	if name := nc.Status.NodeName; name != "" && !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == name }) {
		node := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); client.IgnoreNotFound(err) != nil {
			return err
		} else if err == nil {
			nodes = append(nodes, *node)
		}
	}
	for i := range nodes {
		if err := c.unlink(ctx, nc.UID, &nodes[i]); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("providerID %s is NodeClaim %s's (%s); clearing this NodeClaim's providerID and nodeName and deleting it",
		echo(pid), echo(owner.Name), why)
	nc.Status.ProviderID = ""
	nc.Status.NodeName = ""
	nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, ReasonProviderIDInUse, msg, c.clock.Now())
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, st.base); err != nil {
		return fmt.Errorf("clearing the status of nodeclaim %s: %w", nc.Name, err)
	}
	st.base = nc.DeepCopy()
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, ReasonProviderIDInUse, "Delete", "%s", msg)
	if err := deleteOnce(ctx, c.kube, nc); err != nil {
		return err
	}
	return errDeleted
}

// unlink removes the NodeClaim's owner reference from the node, if any.
func (c *Controller) unlink(ctx context.Context, uid types.UID, node *corev1.Node) error {
	if !slices.ContainsFunc(node.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == uid }) {
		return nil
	}
	base := node.DeepCopy()
	node.OwnerReferences = slices.DeleteFunc(slices.Clone(node.OwnerReferences), func(o metav1.OwnerReference) bool { return o.UID == uid })
	if err := nodeclaimutil.Patch(ctx, c.kube, node, base); err != nil {
		return fmt.Errorf("removing an impostor's owner reference from node %s: %w", node.Name, err)
	}
	return nil
}
