package simulate

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The checks of this file mirror the API server's validation of a pod's
// resources (k8s.io/kubernetes pkg/apis/core/validation:
// ValidateResourceRequirements, validateContainerResourceName,
// validateResourceName, ValidateResourceQuantityValue,
// validateResourceQuantityHugePageValue, validateOverhead,
// validatePodResources, validatePodResourceName,
// validatePodResourceConsistency, and validateEphemeralContainers' field
// allow list; names from pkg/apis/core/helper; pod-level names and sums
// from k8s.io/component-helpers/resource, as the server uses them). k8s.io/kubernetes is not a dependency of dovetail,
// so they are written here, with the server's messages. They differ in the
// paths only: an error about one resource names it (requests[cpu]) where
// the server sometimes names the whole list.

// Messages of the API server (apimachinery's api/validation and
// pkg/apis/core/validation).
const (
	msgNegative   = "must be greater than or equal to 0"
	msgNotInteger = "must be an integer"
)

// resourceDefaultNamespacePrefix marks a native resource of a qualified
// name (kubernetes.io/...), as helper.IsPrefixedNativeResource tests it.
const resourceDefaultNamespacePrefix = "kubernetes.io/"

// isNativeResource is helper.IsNativeResource: an unqualified name or one in
// the kubernetes.io domain.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), resourceDefaultNamespacePrefix)
}

// isExtendedResourceName is helper.IsExtendedResourceName: not native, not
// a quota name (requests.), and a qualified name once prefixed requests.
func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isStandardContainerResourceName is helper.IsStandardContainerResourceName.
func isStandardContainerResourceName(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return isHugePageResourceName(name)
}

// isOvercommitAllowed is helper.IsOvercommitAllowed: a request below its
// limit is allowed for native resources other than hugepages; extended
// resources and hugepages need request == limit.
func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

// checkContainerResourceName is validateResourceName plus
// validateContainerResourceName. An invalid name is reported at the list
// (p), not at a key holding the name (the name is echoed, clipped, as the
// value).
func checkContainerResourceName(name corev1.ResourceName, list *field.Path) *field.Error {
	for _, msg := range validation.IsQualifiedName(string(name)) {
		return field.Invalid(list, string(name), "resource name "+msg)
	}
	switch {
	case !strings.Contains(string(name), "/"):
		if !isStandardContainerResourceName(name) {
			return field.Invalid(list.Key(string(name)), string(name), "must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>) or fully qualified")
		}
	case !isNativeResource(name) && !isExtendedResourceName(name):
		return field.Invalid(list.Key(string(name)), string(name), "doesn't follow extended resource name standard")
	}
	return nil
}

// checkQuantityValue is ValidateResourceQuantityValue (non-negative; an
// integer for an extended resource) and, for hugepages,
// validateResourceQuantityHugePageValue (a whole number of pages).
func checkQuantityValue(name corev1.ResourceName, q resource.Quantity, p *field.Path) *field.Error {
	switch {
	case q.Sign() < 0:
		return field.Invalid(p, q.String(), msgNegative)
	case isExtendedResourceName(name) && q.MilliValue()%1000 != 0:
		return field.Invalid(p, q.String(), msgNotInteger)
	case isHugePageResourceName(name):
		size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
		if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 || q.Value()%size.Value() != 0 {
			return field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))
		}
	}
	return nil
}

// checkResourceRequirements is ValidateResourceRequirements for one
// container's (or the pod's) resources at p: valid names and quantities,
// each request at most its limit, equal to it for extended resources and
// hugepages (which also need the limit set), hugepages only beside cpu or
// memory.
func checkResourceRequirements(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	return checkRequirements(r, p, checkContainerResourceName)
}

// checkRequirements is validateResourceRequirements with the name rule
// of a container (checkContainerResourceName) or of the pod-level
// resources (checkPodResourceName).
func checkRequirements(r *corev1.ResourceRequirements, p *field.Path, checkName func(corev1.ResourceName, *field.Path) *field.Error) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := p.Child("limits"), p.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, name := range sortedResources(r.Limits) {
		if fe := checkName(name, limPath); fe != nil {
			errs = append(errs, fe)
			continue
		}
		if fe := checkQuantityValue(name, r.Limits[name], limPath.Key(string(name))); fe != nil {
			errs = append(errs, fe)
		}
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || isHugePageResourceName(name)
	}
	for _, name := range sortedResources(r.Requests) {
		if fe := checkName(name, reqPath); fe != nil {
			errs = append(errs, fe)
			continue
		}
		q := r.Requests[name]
		fp := reqPath.Key(string(name))
		if fe := checkQuantityValue(name, q, fp); fe != nil {
			errs = append(errs, fe)
		}
		if limit, ok := r.Limits[name]; ok {
			if q.Cmp(limit) != 0 && !isOvercommitAllowed(name) {
				errs = append(errs, field.Invalid(fp, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if q.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(fp, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath.Key(string(name)), "Limit must be set for non overcommitable resources"))
		}
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || isHugePageResourceName(name)
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(p, "HugePages require cpu or memory"))
	}
	return errs
}

// checkPodResources checks every container's resources, that no
// ephemeral container has any, the pod-level resources and the overhead
// (validateOverhead reuses the rules of limits: valid names, non-negative
// quantities, integers for extended resources).
func checkPodResources(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.InitContainers {
		errs = append(errs, checkResourceRequirements(&spec.InitContainers[i].Resources, path.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range spec.Containers {
		errs = append(errs, checkResourceRequirements(&spec.Containers[i].Resources, path.Child("containers").Index(i).Child("resources"))...)
	}
	// validateEphemeralContainers: Resources is not in
	// allowedEphemeralContainerFields, and validateFieldAllowList refuses
	// any value other than the zero one. (ValidatePodCreate refuses any
	// ephemeral container on create, but a live pod gets them through the
	// ephemeralcontainers subresource, and simulate reads live pods.)
	for i := range spec.EphemeralContainers {
		if r := spec.EphemeralContainers[i].Resources; !reflect.DeepEqual(r, corev1.ResourceRequirements{}) {
			errs = append(errs, field.Forbidden(path.Child("ephemeralContainers").Index(i).Child("resources"), "cannot be set for an Ephemeral Container"))
		}
	}
	errs = append(errs, checkPodLevelResources(spec, path)...)
	op := path.Child("overhead")
	for _, name := range sortedResources(spec.Overhead) {
		if fe := checkContainerResourceName(name, op); fe != nil {
			errs = append(errs, fe)
			continue
		}
		if fe := checkQuantityValue(name, spec.Overhead[name], op.Key(string(name))); fe != nil {
			errs = append(errs, fe)
		}
	}
	return errs
}

// supportedPodLevelResources lists the names pod-level resources may
// carry, as the server's NotSupported error lists them.
var supportedPodLevelResources = sets.List(resourcehelper.SupportedPodLevelResources())

// checkPodResourceName is validatePodResourceName: a qualified name
// (validateResourceName) that resourcehelper.IsSupportedPodLevelResource
// accepts (cpu, memory, hugepages-<size>).
func checkPodResourceName(name corev1.ResourceName, list *field.Path) *field.Error {
	for _, msg := range validation.IsQualifiedName(string(name)) {
		return field.Invalid(list, string(name), "resource name "+msg)
	}
	if !resourcehelper.IsSupportedPodLevelResource(name) {
		return field.NotSupported(list.Key(string(name)), name, supportedPodLevelResources)
	}
	return nil
}

// checkPodLevelResources is validatePodResources (run by the server while
// the PodLevelResources gate is on, its default since 1.34): spec.resources
// may not be set for a windows pod nor carry claims; its names and
// quantities follow validateResourceRequirements with the pod-level names;
// and validatePodResourceConsistency: each pod-level request is at least
// the containers' aggregate request of it, each pod-level hugepages limit
// at least their aggregate limit, and no container's limit exceeds the
// pod-level limit of its resource. The aggregates are
// resourcehelper.AggregateContainerRequests/Limits, as the server computes
// them; the server computes them after defaulting (a container's request
// from its limit), which simulate does not do first, so these sums can
// only be lower than the server's: what is refused here the server
// refuses too. Paths: the server reports a container's limit at
// spec.resources.containers[i][name].limits; here it is the container's
// own spec.containers[i].resources.limits[name].
func checkPodLevelResources(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if spec.Resources == nil {
		return nil
	}
	p := path.Child("resources")
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(p, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	if spec.Resources.Claims != nil {
		errs = append(errs, field.Forbidden(p.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	errs = append(errs, checkRequirements(spec.Resources, p, checkPodResourceName)...)
	pod := &corev1.Pod{Spec: *spec}
	reqs := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedResources(reqs) {
		podReq, ok := spec.Resources.Requests[name]
		if ctr := reqs[name]; ok && ctr.Cmp(podReq) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), podReq.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", ctr.String())))
		}
	}
	lims := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedResources(lims) {
		podLim, ok := spec.Resources.Limits[name]
		if ctr := lims[name]; ok && isHugePageResourceName(name) && ctr.Cmp(podLim) > 0 {
			errs = append(errs, field.Invalid(p.Child("limits").Key(string(name)), podLim.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", ctr.String())))
		}
	}
	for i := range spec.Containers {
		l := spec.Containers[i].Resources.Limits
		for _, name := range sortedResources(l) {
			podLim, ok := spec.Resources.Limits[name]
			if ctr := l[name]; ok && ctr.Cmp(podLim) > 0 {
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Child("resources", "limits").Key(string(name)), ctr.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", podLim.String())))
			}
		}
	}
	return errs
}

// checkNodeAmounts is checkAmounts (non-negative, in the engine's range)
// plus ValidateResourceQuantityValue's rule, applied by ValidateNode to a
// node's capacity and allocatable, that an extended resource is a whole
// number.
func checkNodeAmounts(l corev1.ResourceList, p *field.Path) field.ErrorList {
	errs := checkAmounts(l, p)
	for _, name := range sortedResources(l) {
		if q := l[name]; q.Sign() >= 0 && isExtendedResourceName(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), msgNotInteger))
		}
	}
	return errs
}
