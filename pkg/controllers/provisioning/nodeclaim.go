package provisioning

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Creation reasons written to nodeclaimutil.CreationReasonAnnotationKey;
// they become the reason label of karpenter_nodeclaims_created_total.
const (
	ReasonProvisioning = "provisioning"
	ReasonInterruption = "interruption"
)

// DefaultMaxInstanceTypes is how many instance types a NodeClaim offers the
// cloud: the cheapest that hold its pods, widened only as far as the
// NodePool's minValues need.
const DefaultMaxInstanceTypes = 60

// NewNodeClaim turns one planned node into the NodeClaim to create, from
// its NodePool's template:
//
//   - generateName "<nodepool>-";
//   - labels: the template's, karpenter.sh/nodepool, and every label the
//     plan pins to one value (but not the planned hostname: the node's name
//     is the cloud's);
//   - an ownerReference to the NodePool (PoolOwner);
//   - annotations: the template's, the NodePool hash and its version, and
//     the creation reason;
//   - requirements: the plan's (instance types In the cheapest maxTypes
//     options, zone and capacity type narrowed as planned, minValues kept),
//     plus karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass (as the
//     peer writes it) and the template labels as In requirements, so a
//     restarted controller matches pods to the in-flight NodeClaim exactly
//     as the plan did;
//   - taints, startup taints, nodeClassRef, expireAfter and
//     terminationGracePeriod from the template; resources.requests from the
//     plan (the pods' requests plus daemonset overhead).
//
// types are the pool's instance types, used to keep minValues satisfied
// when the options are cut to maxTypes (<= 0 means DefaultMaxInstanceTypes).
func NewNodeClaim(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string, maxTypes int) *karpv1.NodeClaim {
	tmpl := np.Spec.Template
	labels := map[string]string{}
	maps.Copy(labels, tmpl.Labels)
	maps.Copy(labels, planned.Labels)
	delete(labels, corev1.LabelHostname)
	labels[karpv1.NodePoolLabelKey] = np.Name

	annotations := map[string]string{}
	maps.Copy(annotations, tmpl.Annotations)
	maps.Copy(annotations, nodepoolhash.Annotations(np))
	annotations[nodeclaimutil.CreationReasonAnnotationKey] = reason
	if o := planned.Offering; o.InstanceType != "" {
		annotations[karpv1.AnnotationPlannedOffering] = o.InstanceType + "/" + o.Zone + "/" + o.CapacityType
	}

	reqs := planned.Requirements
	options := truncateOptions(planned.InstanceTypeOptions, reqs, types, maxTypes)
	if names := priceOverlays(options, types); names != "" {
		annotations[karpv1.AnnotationPriceOverlays] = names
	}
	var wire []karpv1.NodeSelectorRequirementWithMinValues
	seen := map[string]bool{}
	for r := range reqs.All() {
		key := r.Key()
		if key == corev1.LabelHostname {
			continue
		}
		if key == corev1.LabelInstanceTypeStable && len(options) > 0 {
			wire = append(wire, karpv1.NodeSelectorRequirementWithMinValues{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: options, MinValues: r.MinValues(),
			})
			seen[key] = true
			continue
		}
		seen[key] = true
		exprs := r.NodeSelectorRequirements()
		main := 0
		for i, e := range exprs {
			if e.Operator == corev1.NodeSelectorOpIn {
				main = i
			}
		}
		for i, e := range exprs {
			w := karpv1.NodeSelectorRequirementWithMinValues{Key: e.Key, Operator: e.Operator, Values: e.Values}
			if i == main {
				w.MinValues = r.MinValues()
			}
			wire = append(wire, w)
		}
	}
	if !seen[corev1.LabelInstanceTypeStable] && len(options) > 0 {
		wire = append(wire, karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: options})
	}
	extra := map[string]string{karpv1.NodePoolLabelKey: np.Name}
	maps.Copy(extra, tmpl.Labels)
	if v, ok := planned.Labels[awsv1.LabelNodeClass]; ok {
		extra[awsv1.LabelNodeClass] = v
	}
	for _, k := range sortedKeys(extra) {
		if !seen[k] {
			wire = append(wire, karpv1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{extra[k]}})
		}
	}

	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    np.Name + "-",
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{PoolOwner(np)},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 append([]corev1.Taint(nil), planned.Taints...),
			StartupTaints:          append([]corev1.Taint(nil), planned.StartupTaints...),
			Requirements:           wire,
			Resources:              karpv1.ResourceRequirements{Requests: planned.Requests.DeepCopy()},
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod.DeepCopy(),
			ExpireAfter:            tmpl.Spec.ExpireAfter,
		},
	}
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		r := *ref
		nc.Spec.NodeClassRef = &r
	}
	return nc
}

// PoolOwner is the ownerReference a NodeClaim carries to its NodePool, as
// the peer writes it: deleting the NodePool lets the API server's garbage
// collector delete its NodeClaims (blockOwnerDeletion: a foreground delete
// of the pool waits for them).
func PoolOwner(np *karpv1.NodePool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: karpv1.GroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID,
		BlockOwnerDeletion: ptr.To(true),
	}
}

// truncateOptions cuts the options (cheapest first) to at most max with
// cloudprovider.TruncateLaunchTypes, the rule the cloud provider applies
// too, so that every minValues of reqs is still met by the kept types. When
// it cannot be met within max, the first max are kept and the launch fails
// with the provider's MinValues reason on the NodeClaim.
func truncateOptions(options []string, reqs requirements.Requirements, types []*cloudprovider.InstanceType, max int) []string {
	if max <= 0 {
		max = DefaultMaxInstanceTypes
	}
	if len(options) <= max {
		return append([]string(nil), options...)
	}
	byName := make(map[string]*cloudprovider.InstanceType, len(types))
	for _, it := range types {
		byName[it.Name] = it
	}
	ordered := make([]*cloudprovider.InstanceType, 0, len(options))
	for _, name := range options {
		if it := byName[name]; it != nil {
			ordered = append(ordered, it)
		} else {
			ordered = append(ordered, &cloudprovider.InstanceType{Name: name})
		}
	}
	kept, _ := cloudprovider.TruncateLaunchTypes(ordered, reqs, max)
	out := make([]string, len(kept))
	for i, it := range kept {
		out[i] = it.Name
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// priceOverlays names the NodeOverlays that set the price of an offering of
// the options (comma-separated, sorted), "" when none did.
func priceOverlays(options []string, types []*cloudprovider.InstanceType) string {
	var names []string
	for _, it := range types {
		if it == nil || !slices.Contains(options, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.PriceOverlay != "" && !slices.Contains(names, o.PriceOverlay) {
				names = append(names, o.PriceOverlay)
			}
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
