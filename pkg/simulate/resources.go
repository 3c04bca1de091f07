package simulate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks of this file mirror the API server's validation of a pod's
// resources (k8s.io/kubernetes pkg/apis/core/validation:
// ValidateResourceRequirements, validateContainerResourceName,
// validateResourceName, ValidateResourceQuantityValue,
// validateResourceQuantityHugePageValue, validateOverhead; names from
// pkg/apis/core/helper). k8s.io/kubernetes is not a dependency of dovetail,
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
	var errs field.ErrorList
	limPath, reqPath := p.Child("limits"), p.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, name := range sortedResources(r.Limits) {
		if fe := checkContainerResourceName(name, limPath); fe != nil {
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
		if fe := checkContainerResourceName(name, reqPath); fe != nil {
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

// checkPodResources checks every container's resources, the pod-level
// resources and the overhead (validateOverhead reuses the rules of limits:
// valid names, non-negative quantities, integers for extended resources).
func checkPodResources(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.InitContainers {
		errs = append(errs, checkResourceRequirements(&spec.InitContainers[i].Resources, path.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range spec.Containers {
		errs = append(errs, checkResourceRequirements(&spec.Containers[i].Resources, path.Child("containers").Index(i).Child("resources"))...)
	}
	if spec.Resources != nil {
		errs = append(errs, checkResourceRequirements(spec.Resources, path.Child("resources"))...)
	}
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
