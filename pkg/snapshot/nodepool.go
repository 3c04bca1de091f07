package snapshot

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
	"github.com/dovetail-sh/dovetail/pkg/requirements/apireq"
)

// Unsupported reasons put in engine.NodePool.UnsupportedReason.
//
// ReasonStaticPool: a NodePool with spec.replicas (a static pool) gets no
// nodes for pending pods: its count is spec.replicas, kept by the static
// controller. Pods may still be placed on its existing nodes.
const ReasonStaticPool = "static NodePool (spec.replicas): it launches nodes to keep its replica count, not for pending pods"

const (
	// ReasonWindows is given to pools whose node class uses a Windows AMI
	// family or alias.
	ReasonWindows = "Windows AMI families are not supported yet"
)

// NodeClassKey is how a nodeClassRef is resolved: the EC2NodeClass of that
// name when group and kind are those of EC2NodeClass.
func nodeClassSupported(ref *karpv1.NodeClassReference) bool {
	return ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass"
}

// Requirements converts API requirements (with minValues) into the
// requirement algebra (apireq.Convert, the one conversion). Errors carry
// path.Index(i) field paths.
func Requirements(reqs []karpv1.NodeSelectorRequirementWithMinValues, path *field.Path) (requirements.Requirements, field.ErrorList) {
	return apireq.Convert(reqs, path)
}

// NodePool converts a NodePool and its node class into the engine's view:
// requirements with minValues, template labels (plus
// karpenter.k8s.aws/ec2nodeclass, the name of its EC2NodeClass), taints, startup taints,
// limits, weight (unset is 0), the usage it already has, its instance types,
// and an UnsupportedReason for Windows node classes, for pools whose
// karpenter.k8s.aws/ec2nodeclass requirement excludes their own class and for
// pools that allow only reserved capacity. It returns an *InvalidObjectError when a
// requirement does not parse. It does not check that nc is the class the
// pool references; Build does.
func NodePool(np *karpv1.NodePool, nc *awsv1.EC2NodeClass, types []*cloudprovider.InstanceType, usage corev1.ResourceList) (engine.NodePool, error) {
	spec := np.Spec.Template.Spec
	reqs, errs := Requirements(spec.Requirements, field.NewPath("spec", "template", "spec", "requirements"))
	if len(errs) > 0 {
		return engine.NodePool{}, &InvalidObjectError{Kind: "NodePool", Name: np.Name, Errs: errs}
	}
	labels := np.Spec.Template.Labels
	if ref := spec.NodeClassRef; ref != nil && nodeClassSupported(ref) {
		// Every node of the pool carries its EC2NodeClass's name, as the
		// peer's do: pods may select it, and a requirement on it that
		// excludes the pool's own class leaves the pool nothing to launch.
		labels = make(map[string]string, len(np.Spec.Template.Labels)+1)
		maps.Copy(labels, np.Spec.Template.Labels)
		labels[awsv1.LabelNodeClass] = ref.Name
	}
	out := engine.NodePool{
		Name:          np.Name,
		Requirements:  reqs,
		Labels:        labels,
		Taints:        spec.Taints,
		StartupTaints: spec.StartupTaints,
		Limits:        corev1.ResourceList(np.Spec.Limits),
		Usage:         usage,
		InstanceTypes: types,
	}
	if np.Spec.Weight != nil {
		out.Weight = *np.Spec.Weight
	}
	switch {
	case np.Spec.Replicas != nil:
		out.UnsupportedReason = ReasonStaticPool
	case excludesOwnClass(reqs, labels[awsv1.LabelNodeClass]):
		out.UnsupportedReason = fmt.Sprintf("its requirement %s excludes its own EC2NodeClass %q (spec.template.spec.nodeClassRef.name)",
			reqs.Get(awsv1.LabelNodeClass), labels[awsv1.LabelNodeClass])
	case nc != nil && IsWindows(nc.AMIFamily()):
		out.UnsupportedReason = fmt.Sprintf("%s (EC2NodeClass %q uses %s)", ReasonWindows, nc.Name, nc.AMIFamily())
	case nc != nil && nc.Alias() != "" && awsv1.FamilyFromAlias(nc.Alias()) == "":
		out.UnsupportedReason = fmt.Sprintf("EC2NodeClass %q has an AMI alias of an unknown family: %q", nc.Name, nc.Alias())
	}
	return out, nil
}

// excludesOwnClass reports whether the karpenter.k8s.aws/ec2nodeclass
// requirement leaves out class, the pool's own EC2NodeClass.
func excludesOwnClass(reqs requirements.Requirements, class string) bool {
	r := reqs.Get(awsv1.LabelNodeClass)
	return r != nil && class != "" && !r.Has(class)
}
