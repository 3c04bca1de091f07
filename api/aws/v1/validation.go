package v1

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeValidate checks what the CRD schema leaves to run time, as the
// peer's does: a class without the spec fields the schema requires only
// when spec is present, and the kubelet settings, which the schema takes
// free-form (types only): reserved-resource and eviction-signal names,
// quantities and thresholds, soft thresholds paired with grace periods,
// image GC percentages, clusterDNS addresses, non-negative pod caps. The
// resolver reports the result as ValidationSucceeded (a Ready dependent).
// The errors carry field paths rooted at "spec".
func (in *EC2NodeClass) RuntimeValidate() field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(in.Spec.SubnetSelectorTerms) == 0 {
		errs = append(errs, field.Required(spec.Child("subnetSelectorTerms"), "at least one subnet selector term"))
	}
	if len(in.Spec.SecurityGroupSelectorTerms) == 0 {
		errs = append(errs, field.Required(spec.Child("securityGroupSelectorTerms"), "at least one security group selector term"))
	}
	if len(in.Spec.AMISelectorTerms) == 0 {
		errs = append(errs, field.Required(spec.Child("amiSelectorTerms"), "at least one AMI selector term"))
	}
	if (in.Spec.Role == "") == (in.Spec.InstanceProfile == nil || *in.Spec.InstanceProfile == "") {
		errs = append(errs, field.Required(spec.Child("role"), "exactly one of role and instanceProfile"))
	}
	k := in.Spec.Kubelet
	if k == nil {
		return errs
	}
	path := spec.Child("kubelet")
	var kerrs field.ErrorList
	for _, key := range slices.Sorted(maps.Keys(k.TypeErrors)) {
		kerrs = append(kerrs, field.Invalid(path.Child(key), key, k.TypeErrors[key]))
	}
	for i, ip := range k.ClusterDNS {
		if net.ParseIP(ip) == nil {
			kerrs = append(kerrs, field.Invalid(path.Child("clusterDNS").Index(i), ip, "must be an IP address"))
		}
	}
	for name, v := range map[string]*int32{"maxPods": k.MaxPods, "podsPerCore": k.PodsPerCore, "evictionMaxPodGracePeriod": k.EvictionMaxPodGracePeriod} {
		if v != nil && *v < 0 {
			kerrs = append(kerrs, field.Invalid(path.Child(name), *v, "must not be negative"))
		}
	}
	for name, v := range map[string]*int32{"imageGCHighThresholdPercent": k.ImageGCHighThresholdPercent, "imageGCLowThresholdPercent": k.ImageGCLowThresholdPercent} {
		if v != nil && (*v < 0 || *v > 100) {
			kerrs = append(kerrs, field.Invalid(path.Child(name), *v, "must be between 0 and 100"))
		}
	}
	if h, l := k.ImageGCHighThresholdPercent, k.ImageGCLowThresholdPercent; h != nil && l != nil && *h <= *l {
		kerrs = append(kerrs, field.Invalid(path.Child("imageGCHighThresholdPercent"), *h, "must be greater than imageGCLowThresholdPercent"))
	}
	for name, m := range map[string]map[string]string{"systemReserved": k.SystemReserved, "kubeReserved": k.KubeReserved} {
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(reservedResources, key) {
				kerrs = append(kerrs, field.NotSupported(path.Child(name).Key(key), key, reservedResources))
				continue
			}
			q, err := resource.ParseQuantity(m[key])
			if err != nil || q.Sign() < 0 {
				kerrs = append(kerrs, field.Invalid(path.Child(name).Key(key), m[key], "must be a non-negative quantity such as 100m or 1Gi"))
			}
		}
	}
	for name, m := range map[string]map[string]string{"evictionHard": k.EvictionHard, "evictionSoft": k.EvictionSoft} {
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(evictionSignals, key) {
				kerrs = append(kerrs, field.NotSupported(path.Child(name).Key(key), key, evictionSignals))
				continue
			}
			if !validThreshold(m[key]) {
				kerrs = append(kerrs, field.Invalid(path.Child(name).Key(key), m[key], "must be a percentage in (0%, 100%] or a non-negative quantity"))
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.EvictionSoftGracePeriod)) {
		if !slices.Contains(evictionSignals, key) {
			kerrs = append(kerrs, field.NotSupported(path.Child("evictionSoftGracePeriod").Key(key), key, evictionSignals))
		} else if _, ok := k.EvictionSoft[key]; !ok {
			kerrs = append(kerrs, field.Invalid(path.Child("evictionSoftGracePeriod").Key(key), key, "has no evictionSoft threshold"))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.EvictionSoft)) {
		if _, ok := k.EvictionSoftGracePeriod[key]; !ok {
			kerrs = append(kerrs, field.Required(path.Child("evictionSoftGracePeriod").Key(key), "every evictionSoft threshold needs a grace period"))
		}
	}
	// Map iteration above is unordered; sort by path.
	slices.SortStableFunc(kerrs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return append(errs, kerrs...)
}

// reservedResources and evictionSignals are the keys the kubelet takes in
// systemReserved/kubeReserved and in the eviction maps.
var (
	reservedResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}
	evictionSignals   = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
)

func validThreshold(v string) bool {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		return err == nil && f > 0 && f <= 100
	}
	q, err := resource.ParseQuantity(v)
	return err == nil && q.Sign() >= 0
}
