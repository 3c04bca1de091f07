package simulate

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// validate checks what the API server would refuse and the simulation
// depends on. For NodePool, NodeClaim and EC2NodeClass these are some CRD
// rules mirrored by hand for their more precise paths and messages (the
// whole CRD is then checked by validateAgainstCRD) plus the api packages'
// RuntimeValidate; for workloads, that there is something to run. Paths
// are rooted at the object.
func validate(kind string, obj any) field.ErrorList {
	switch o := obj.(type) {
	case *karpv1.NodePool:
		return validateNodePool(o)
	case *karpv1.NodeClaim:
		return validateNodeClaim(o)
	case *karpv1alpha1.NodeOverlay:
		return overlay.Validate(o)
	case *awsv1.EC2NodeClass:
		return validateNodeClass(o)
	case *corev1.Pod:
		return validatePodSpec(&o.Spec, field.NewPath("spec"))
	case *corev1.Node:
		return append(checkNodeAmounts(o.Status.Capacity, field.NewPath("status", "capacity")),
			checkNodeAmounts(o.Status.Allocatable, field.NewPath("status", "allocatable"))...)
	case *appsv1.Deployment:
		return validateWorkload(o.Spec.Replicas, &o.Spec.Template.Spec, field.NewPath("spec"))
	case *appsv1.ReplicaSet:
		return validateWorkload(o.Spec.Replicas, &o.Spec.Template.Spec, field.NewPath("spec"))
	case *appsv1.StatefulSet:
		return validateWorkload(o.Spec.Replicas, &o.Spec.Template.Spec, field.NewPath("spec"))
	case *corev1.ReplicationController:
		if o.Spec.Template == nil {
			return field.ErrorList{field.Required(field.NewPath("spec", "template"), "the pods it makes")}
		}
		return validateWorkload(o.Spec.Replicas, &o.Spec.Template.Spec, field.NewPath("spec"))
	case *appsv1.DaemonSet:
		return validatePodSpec(&o.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
	case *policyv1.PodDisruptionBudget:
		return validatePDB(o)
	case *corev1.ConfigMap:
		if o.Name != commitment.ConfigMapName {
			return field.ErrorList{field.NotSupported(field.NewPath("metadata", "name"), o.Name, []string{commitment.ConfigMapName})}
		}
		_, errs := commitment.FromConfigMap(o.Data)
		return errs
	case *batchv1.Job:
		errs := validatePodSpec(&o.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
		if p := o.Spec.Parallelism; p != nil && *p < 0 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "parallelism"), *p, "must not be negative"))
		}
		if c := o.Spec.Completions; c != nil && *c < 0 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "completions"), *c, "must not be negative"))
		}
		return errs
	}
	return nil
}

func validateWorkload(replicas *int32, spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if replicas != nil && *replicas < 0 {
		errs = append(errs, field.Invalid(path.Child("replicas"), *replicas, "must not be negative"))
	}
	return append(errs, validatePodSpec(spec, path.Child("template", "spec"))...)
}

func validatePodSpec(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	return append(errs, checkPodResources(spec, path)...)
}

// inDomain reports whether key is in domain (the domain itself or a
// subdomain), as the CRD rules test it.
func inDomain(key, domain string) bool {
	return strings.HasPrefix(key, domain+"/") || strings.Contains(key, "."+domain+"/")
}

// checkKey applies the NodePool/NodeClaim key rules: never
// kubernetes.io/hostname, karpenter.sh keys only from allowed, and
// karpenter.k8s.aws keys only if well known.
func checkKey(key string, allowed []string, p *field.Path, what string) *field.Error {
	switch {
	case key == corev1.LabelHostname:
		return field.Forbidden(p, what+" may not use kubernetes.io/hostname")
	case inDomain(key, karpv1.Group) && !slices.Contains(allowed, key):
		var own []string
		for _, a := range allowed {
			if inDomain(a, karpv1.Group) {
				own = append(own, a)
			}
		}
		if len(own) == 0 {
			return field.Forbidden(p, what+" may not use keys in the karpenter.sh domain")
		}
		return field.Forbidden(p, what+" may not use keys in the karpenter.sh domain, except "+strings.Join(own, " and "))
	case inDomain(key, awsv1.Group) && !slices.Contains(awsv1.WellKnownLabels, key) && !slices.Contains(allowed, key):
		if slices.Contains(allowed, awsv1.LabelNodeClass) {
			return field.Forbidden(p, what+" may use keys in the karpenter.k8s.aws domain only if they are well-known instance labels or "+awsv1.LabelNodeClass)
		}
		return field.Forbidden(p, what+" may use keys in the karpenter.k8s.aws domain only if they are well-known instance labels")
	}
	return nil
}

func validateRequirements(reqs []karpv1.NodeSelectorRequirementWithMinValues, allowed []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(reqs) > 100 {
		errs = append(errs, field.TooMany(path, len(reqs), 100))
	}
	for i, r := range reqs {
		if fe := checkKey(r.Key, allowed, path.Index(i).Child("key"), "requirements"); fe != nil {
			errs = append(errs, fe)
		}
	}
	_, perrs := snapshot.Requirements(reqs, path)
	return append(errs, perrs...)
}

func validateNodePool(np *karpv1.NodePool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if w := np.Spec.Weight; w != nil && (*w < 1 || *w > 100) {
		errs = append(errs, field.Invalid(spec.Child("weight"), *w, "must be between 1 and 100"))
	}
	tmpl := spec.Child("template")
	for _, k := range sortedKeys(np.Spec.Template.Labels) {
		if fe := checkKey(k, []string{karpv1.CapacityTypeLabelKey, awsv1.LabelNodeClass}, tmpl.Child("metadata", "labels").Key(k), "labels"); fe != nil {
			errs = append(errs, fe)
		}
	}
	ts := &np.Spec.Template.Spec
	if ref := ts.NodeClassRef; ref == nil {
		errs = append(errs, field.Required(tmpl.Child("spec", "nodeClassRef"), "a NodePool must reference its EC2NodeClass"))
	} else {
		errs = append(errs, validateRef(ref, tmpl.Child("spec", "nodeClassRef"))...)
	}
	// karpenter.k8s.aws/ec2nodeclass is allowed, as the peer allows it: it
	// is the label every node of the pool gets (the name of its
	// nodeClassRef), so a requirement on it either agrees with the
	// reference or leaves the pool unable to launch (snapshot.NodePool).
	errs = append(errs, validateRequirements(ts.Requirements, []string{karpv1.CapacityTypeLabelKey, awsv1.LabelNodeClass}, tmpl.Child("spec", "requirements"))...)
	// spec.replicas is valid (the API server accepts it): such a pool is
	// planned as unsupported (no nodes), as the controller treats it.
	for _, e := range np.RuntimeValidate() {
		if e.Field != "spec.replicas" {
			errs = append(errs, e)
		}
	}
	return errs
}

func validateRef(ref *karpv1.NodeClassReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Group != awsv1.Group {
		errs = append(errs, field.NotSupported(p.Child("group"), ref.Group, []string{awsv1.Group}))
	}
	if ref.Kind != "EC2NodeClass" {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, []string{"EC2NodeClass"}))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	return errs
}

func validateNodeClaim(nc *karpv1.NodeClaim) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if ref := nc.Spec.NodeClassRef; ref != nil {
		errs = append(errs, validateRef(ref, spec.Child("nodeClassRef"))...)
	}
	// The peer writes its EC2NodeClass's name as a requirement on every
	// NodeClaim it creates.
	errs = append(errs, validateRequirements(nc.Spec.Requirements, []string{karpv1.CapacityTypeLabelKey, karpv1.NodePoolLabelKey, awsv1.LabelNodeClass}, spec.Child("requirements"))...)
	// The status is what an existing claim's node offers (the CRD check
	// leaves it out, as the server does on create): as for a Node's, no
	// amount may be negative or out of range, nor an extended resource
	// fractional.
	errs = append(errs, checkNodeAmounts(nc.Status.Capacity, field.NewPath("status", "capacity"))...)
	errs = append(errs, checkNodeAmounts(nc.Status.Allocatable, field.NewPath("status", "allocatable"))...)
	return append(errs, nc.RuntimeValidate()...)
}

func validateNodeClass(nc *awsv1.EC2NodeClass) field.ErrorList {
	var errs field.ErrorList
	terms := field.NewPath("spec", "amiSelectorTerms")
	for i, t := range nc.Spec.AMISelectorTerms {
		if t.Alias != "" && awsv1.FamilyFromAlias(t.Alias) == "" {
			errs = append(errs, field.Invalid(terms.Index(i).Child("alias"), t.Alias,
				"the family must be one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025"))
		}
	}
	if nc.Alias() == "" && nc.Spec.AMIFamily == nil {
		errs = append(errs, field.Required(field.NewPath("spec", "amiFamily"), "required unless amiSelectorTerms has an alias"))
	}
	errs = append(errs, nc.RuntimeValidate()...)
	if len(errs) == 0 {
		_, kerrs := snapshot.KubeletSettings(nc)
		errs = append(errs, kerrs...)
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// validatePDB checks what the API server refuses in a PodDisruptionBudget
// and the allowance depends on: at most one of minAvailable and
// maxUnavailable, each a non-negative count or a percentage up to 100%, a
// valid selector, a non-negative status.disruptionsAllowed.
func validatePDB(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(spec, "", "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, f := range []struct {
		name string
		v    *intstr.IntOrString
	}{{"minAvailable", pdb.Spec.MinAvailable}, {"maxUnavailable", pdb.Spec.MaxUnavailable}} {
		if f.v == nil {
			continue
		}
		if _, err := pdbPercent(*f.v); err != nil {
			errs = append(errs, field.Invalid(spec.Child(f.name), f.v.String(), err.Error()))
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil {
		errs = append(errs, field.Invalid(spec.Child("selector"), metav1.FormatLabelSelector(pdb.Spec.Selector), err.Error()))
	}
	if a := pdb.Status.DisruptionsAllowed; a < 0 {
		errs = append(errs, field.Invalid(field.NewPath("status", "disruptionsAllowed"), a, "must not be negative"))
	}
	return errs
}
