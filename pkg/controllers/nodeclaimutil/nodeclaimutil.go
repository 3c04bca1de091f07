package nodeclaimutil

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
)

// Annotations dovetail writes that the peer does not have.
const (
	// PriceAnnotationKey on a launched NodeClaim holds the hourly price in
	// USD of the offering it launched on, as the cloud provider quoted it at
	// launch ("0.0416"). dovetail_nodepool_cost_per_hour sums it.
	PriceAnnotationKey = karpv1.AnnotationPricePerHour
	// CreationReasonAnnotationKey on a NodeClaim says why it was made
	// ("provisioning", the default, or a disruption reason such as
	// "drifted"); it labels karpenter_nodeclaims_created_total.
	CreationReasonAnnotationKey = planner.CreationReasonAnnotation
)

// DefaultCreationReason labels NodeClaims without CreationReasonAnnotationKey.
const DefaultCreationReason = "provisioning"

// Cache index names (field paths by convention).
const (
	IndexNodeProviderID           = "spec.providerID"
	IndexNodeClaimProviderID      = "status.providerID"
	IndexNodeClaimNodeClassName   = "spec.nodeClassRef.name"
	IndexPodNodeName              = "spec.nodeName"
	IndexVolumeAttachmentNodeName = "spec.nodeName"
)

// RegisterIndexes adds the indexes every lookup in this package relies on.
// Call it once per manager, before the manager starts.
func RegisterIndexes(ctx context.Context, idx client.FieldIndexer) error {
	indexes := []struct {
		obj  client.Object
		name string
		fn   client.IndexerFunc
	}{
		{&corev1.Node{}, IndexNodeProviderID, func(o client.Object) []string {
			return nonEmpty(o.(*corev1.Node).Spec.ProviderID)
		}},
		{&karpv1.NodeClaim{}, IndexNodeClaimProviderID, func(o client.Object) []string {
			return nonEmpty(o.(*karpv1.NodeClaim).Status.ProviderID)
		}},
		{&karpv1.NodeClaim{}, IndexNodeClaimNodeClassName, func(o client.Object) []string {
			if ref := o.(*karpv1.NodeClaim).Spec.NodeClassRef; ref != nil {
				return nonEmpty(ref.Name)
			}
			return nil
		}},
		{&corev1.Pod{}, IndexPodNodeName, func(o client.Object) []string {
			return nonEmpty(o.(*corev1.Pod).Spec.NodeName)
		}},
		{&storagev1.VolumeAttachment{}, IndexVolumeAttachmentNodeName, func(o client.Object) []string {
			return nonEmpty(o.(*storagev1.VolumeAttachment).Spec.NodeName)
		}},
	}
	for _, i := range indexes {
		if err := idx.IndexField(ctx, i.obj, i.name, i.fn); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.name, err)
		}
	}
	return nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// NodesForProviderID returns the Nodes with the providerID, sorted by name
// (normally zero or one).
func NodesForProviderID(ctx context.Context, r client.Reader, providerID string) ([]corev1.Node, error) {
	if providerID == "" {
		return nil, nil
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.MatchingFields{IndexNodeProviderID: providerID}); err != nil {
		return nil, fmt.Errorf("listing nodes with providerID %s: %w", providerID, err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	return nodes.Items, nil
}

// NodeClaimForProviderID returns the NodeClaim whose status.providerID is
// providerID, or nil when there is none. With several (which dovetail
// never creates) it returns the oldest.
func NodeClaimForProviderID(ctx context.Context, r client.Reader, providerID string) (*karpv1.NodeClaim, error) {
	if providerID == "" {
		return nil, nil
	}
	var ncs karpv1.NodeClaimList
	if err := r.List(ctx, &ncs, client.MatchingFields{IndexNodeClaimProviderID: providerID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims with providerID %s: %w", providerID, err)
	}
	if len(ncs.Items) == 0 {
		return nil, nil
	}
	sort.Slice(ncs.Items, func(i, j int) bool {
		a, b := ncs.Items[i].CreationTimestamp, ncs.Items[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return ncs.Items[i].Name < ncs.Items[j].Name
	})
	return &ncs.Items[0], nil
}

// PodsOnNode returns the pods bound to the node, sorted by namespace/name.
func PodsOnNode(ctx context.Context, r client.Reader, nodeName string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.MatchingFields{IndexPodNodeName: nodeName}); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", nodeName, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		if pods.Items[i].Namespace != pods.Items[j].Namespace {
			return pods.Items[i].Namespace < pods.Items[j].Namespace
		}
		return pods.Items[i].Name < pods.Items[j].Name
	})
	return pods.Items, nil
}

// IsManaged reports whether dovetail manages the node (it carries the
// NodePool label).
func IsManaged(node *corev1.Node) bool {
	_, ok := node.Labels[karpv1.NodePoolLabelKey]
	return ok
}

// NodePool returns the NodePool a NodeClaim or Node belongs to ("" if none).
func NodePool(obj client.Object) string { return obj.GetLabels()[karpv1.NodePoolLabelKey] }

// HourlyPrice reads PriceAnnotationKey; ok is false when the annotation is
// missing or not a finite non-negative number.
func HourlyPrice(nc *karpv1.NodeClaim) (price float64, ok bool) {
	s, found := nc.Annotations[PriceAnnotationKey]
	if !found {
		return 0, false
	}
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
		return 0, false
	}
	return p, true
}

// FormatOffering writes karpv1.AnnotationOffering:
// "<instance-type>/<zone>/<capacity-type>".
func FormatOffering(instanceType, zone, capacityType string) string {
	return instanceType + "/" + zone + "/" + capacityType
}

// Offering reads karpv1.AnnotationOffering; ok is false when it is absent
// or not three non-empty parts.
func Offering(nc *karpv1.NodeClaim) (instanceType, zone, capacityType string, ok bool) {
	parts := strings.Split(nc.Annotations[karpv1.AnnotationOffering], "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// FormatPrice writes a price for PriceAnnotationKey.
func FormatPrice(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// MapNodeToNodeClaim is an event handler mapping a Node to the NodeClaim
// with its providerID, for controllers that reconcile NodeClaims and watch
// Nodes.
func MapNodeToNodeClaim(r client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		node, ok := o.(*corev1.Node)
		if !ok {
			return nil
		}
		nc, err := NodeClaimForProviderID(ctx, r, node.Spec.ProviderID)
		if err != nil || nc == nil {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nc.Name}}}
	})
}

// MapNodeClaimToNodes is an event handler mapping a NodeClaim to the Nodes
// with its providerID.
func MapNodeClaimToNodes(r client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		nc, ok := o.(*karpv1.NodeClaim)
		if !ok {
			return nil
		}
		nodes, err := NodesForProviderID(ctx, r, nc.Status.ProviderID)
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
		}
		return out
	})
}

// ConflictRequeue is how soon a reconcile that lost an optimistic-locking
// race runs again: soon, since the cache has (or is about to have) the
// newer object.
const ConflictRequeue = 100 * time.Millisecond

// RequeueOnConflict turns a conflict into a quick requeue without an error
// (a lost race is normal between controllers sharing an object) and passes
// any other error through.
func RequeueOnConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: ConflictRequeue}, nil
	}
	return reconcile.Result{}, err
}

// PatchStatus writes the status of obj as changed from base, failing with a
// conflict if obj changed on the server since base was read.
func PatchStatus(ctx context.Context, c client.Client, obj, base client.Object) error {
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// Patch writes the metadata/spec of obj as changed from base under
// optimistic locking.
func Patch(ctx context.Context, c client.Client, obj, base client.Object) error {
	return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// Earliest returns the result that requeues soonest among the given ones:
// a zero RequeueAfter counts as "no requeue".
func Earliest(results ...reconcile.Result) reconcile.Result {
	var out reconcile.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
	}
	return out
}
