package nodeclaimutil

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/pkg/commitment"
)

// ReadCommitments reads the ConfigMap dovetail-commitments of namespace
// ns (pkg/commitment), by name from r (provisioning and disruption pass
// their API reader: one GET per pass, no cache of ConfigMaps). Absent:
// no commitments. Invalid: no commitments and an error naming the
// fields, which the caller logs; plans are then made as without it.
func ReadCommitments(ctx context.Context, r client.Reader, ns string) (commitment.Spec, error) {
	if r == nil || ns == "" {
		return commitment.Spec{}, nil
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: commitment.ConfigMapName}, &cm)
	if apierrors.IsNotFound(err) {
		return commitment.Spec{}, nil
	}
	if err != nil {
		return commitment.Spec{}, fmt.Errorf("reading %s/%s: %w", ns, commitment.ConfigMapName, err)
	}
	spec, errs := commitment.FromConfigMap(cm.Data)
	if len(errs) > 0 {
		return commitment.Spec{}, fmt.Errorf("%s/%s: no commitment applied: %w", ns, commitment.ConfigMapName, errs.ToAggregate())
	}
	return spec, nil
}
