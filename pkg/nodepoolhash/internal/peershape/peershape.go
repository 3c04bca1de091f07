package peershape

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// NodeClaimTemplate is a NodePool's spec.template as the peer hashes it.
type NodeClaimTemplate struct {
	ObjectMeta
	Spec NodeClaimTemplateSpec
}

// ObjectMeta is the template's metadata.
type ObjectMeta struct {
	Labels      map[string]string
	Annotations map[string]string
}

// NodeClaimTemplateSpec is the template's spec. The peer's requirements
// field is tagged hash:"ignore", so it adds nothing and is left out.
type NodeClaimTemplateSpec struct {
	Taints                 []corev1.Taint
	StartupTaints          []corev1.Taint
	NodeClassRef           *NodeClassReference
	TerminationGracePeriod *metav1.Duration
	ExpireAfter            NillableDuration
}

// NodeClassReference is spec.nodeClassRef.
type NodeClassReference struct {
	Kind  string
	Name  string
	Group string
}

// NillableDuration is expireAfter: a duration, or nil for "Never" (then
// the whole value is zero and not hashed). The peer's raw text is tagged
// hash:"ignore" and left out, so "60m" and "1h" hash the same.
type NillableDuration struct {
	*time.Duration
}

// Of returns the template of np in the peer's shape.
func Of(np *karpv1.NodePool) NodeClaimTemplate {
	t := np.Spec.Template
	out := NodeClaimTemplate{
		ObjectMeta: ObjectMeta{Labels: t.Labels, Annotations: t.Annotations},
		Spec: NodeClaimTemplateSpec{
			Taints:                 t.Spec.Taints,
			StartupTaints:          t.Spec.StartupTaints,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod,
		},
	}
	if r := t.Spec.NodeClassRef; r != nil {
		out.Spec.NodeClassRef = &NodeClassReference{Kind: r.Kind, Name: r.Name, Group: r.Group}
	}
	if d, ok := t.Spec.ExpireAfter.Duration(); ok {
		out.Spec.ExpireAfter.Duration = &d
	}
	return out
}
