package cloudprovider

import (
	"fmt"
	"slices"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// DefaultMaxLaunchTypes is how many instance types one launch offers the
// cloud at most (the peer's 60).
const DefaultMaxLaunchTypes = 60

// TruncateLaunchTypes is the one rule for cutting an ordered list of
// instance-type options (most preferred first) down to at most max types
// (DefaultMaxLaunchTypes when max <= 0) while every minValues of reqs still
// holds over the kept types:
//
//  1. for each key with minValues, in key order, the earliest types that
//     add a value of the key not yet kept are taken until the key has
//     minValues distinct values;
//  2. the remaining room is filled with the earliest types not taken yet;
//  3. the kept types are returned in their original order.
//
// The values of a key for a type are: its name for
// node.kubernetes.io/instance-type, its label when it has one, and for
// topology.kubernetes.io/zone and karpenter.sh/capacity-type those of its
// offerings; only values reqs allows count. When minValues cannot hold
// within max types, it returns the first max types and an error wrapping
// requirements.ErrMinValuesNotMet: a *requirements.MinValuesError for the
// first key short of distinct values, or more than max types needed.
func TruncateLaunchTypes(ordered []*InstanceType, reqs requirements.Requirements, max int) ([]*InstanceType, error) {
	if max <= 0 {
		max = DefaultMaxLaunchTypes
	}
	keep := make([]bool, len(ordered))
	kept := 0
	var short *requirements.MinValuesError
	for r := range reqs.All() {
		mv := r.MinValues()
		if mv == nil || *mv <= 0 {
			continue
		}
		key, need := r.Key(), *mv
		have := map[string]bool{}
		count := func(i int) bool {
			added := false
			for _, v := range launchValues(ordered[i], key) {
				if r.Has(v) && !have[v] {
					have[v] = true
					added = true
				}
			}
			return added
		}
		for i := range ordered {
			if keep[i] {
				count(i)
			}
		}
		for i := 0; i < len(ordered) && len(have) < need; i++ {
			if !keep[i] && count(i) {
				keep[i] = true
				kept++
			}
		}
		if len(have) < need && short == nil {
			short = &requirements.MinValuesError{Key: key, MinValues: need, Available: len(have)}
		}
	}
	if short != nil {
		return slices.Clone(ordered[:min(max, len(ordered))]), short
	}
	if kept > max {
		return slices.Clone(ordered[:max]), fmt.Errorf("%w: minValues needs %d instance types, more than the %d one launch may offer",
			requirements.ErrMinValuesNotMet, kept, max)
	}
	for i := 0; i < len(ordered) && kept < max; i++ {
		if !keep[i] {
			keep[i] = true
			kept++
		}
	}
	out := make([]*InstanceType, 0, kept)
	for i, it := range ordered {
		if keep[i] {
			out = append(out, it)
		}
	}
	return out, nil
}

// launchValues are the values a type offers for a key (see
// TruncateLaunchTypes).
func launchValues(it *InstanceType, key string) []string {
	switch key {
	case karpv1.LabelInstanceType:
		return []string{it.Name}
	case karpv1.LabelTopologyZone, karpv1.CapacityTypeLabelKey:
		var out []string
		for _, o := range it.Offerings {
			v := o.Zone
			if key == karpv1.CapacityTypeLabelKey {
				v = o.CapacityType
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	if v, ok := it.Labels[key]; ok {
		return []string{v}
	}
	return nil
}
