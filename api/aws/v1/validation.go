package v1

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeValidate checks what the CRD schema cannot afford to (CEL's cost
// budget refuses parsing unbounded map values): kubelet reserved resources
// must be non-negative quantities, and eviction thresholds percentages in
// (0, 100] or non-negative quantities. Everything else is enforced by the
// apiserver. The errors carry field paths rooted at "spec".
func (in *EC2NodeClass) RuntimeValidate() field.ErrorList {
	k := in.Spec.Kubelet
	if k == nil {
		return nil
	}
	path := field.NewPath("spec", "kubelet")
	var errs field.ErrorList
	for name, m := range map[string]map[string]string{"systemReserved": k.SystemReserved, "kubeReserved": k.KubeReserved} {
		for _, key := range slices.Sorted(maps.Keys(m)) {
			q, err := resource.ParseQuantity(m[key])
			if err != nil || q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(name).Key(key), m[key], "must be a non-negative quantity such as 100m or 1Gi"))
			}
		}
	}
	for name, m := range map[string]map[string]string{"evictionHard": k.EvictionHard, "evictionSoft": k.EvictionSoft} {
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if !validThreshold(m[key]) {
				errs = append(errs, field.Invalid(path.Child(name).Key(key), m[key], "must be a percentage in (0%, 100%] or a non-negative quantity"))
			}
		}
	}
	// Map iteration above is unordered between the two maps; sort by path.
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

func validThreshold(v string) bool {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		return err == nil && f > 0 && f <= 100
	}
	q, err := resource.ParseQuantity(v)
	return err == nil && q.Sign() >= 0
}
