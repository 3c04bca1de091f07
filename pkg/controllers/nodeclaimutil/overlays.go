package nodeclaimutil

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
)

// ListNodeOverlays lists the NodeOverlays, in name order; none when the
// NodeOverlay CRD is not installed.
func ListNodeOverlays(ctx context.Context, kube client.Reader) ([]*karpv1alpha1.NodeOverlay, error) {
	var list karpv1alpha1.NodeOverlayList
	if err := kube.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing NodeOverlays: %w", err)
	}
	out := make([]*karpv1alpha1.NodeOverlay, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	slices.SortFunc(out, func(a, b *karpv1alpha1.NodeOverlay) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
