package requirements

import "slices"

// MinValuesSatisfied checks every key of rs that carries minValues, in key
// order: distinct(key) must return how many distinct values of the key the
// caller still has available (e.g. distinct instance families among the
// instance types left after filtering) and be at least minValues. It returns
// nil or a *MinValuesError for the first key short of its minimum.
func (rs Requirements) MinValuesSatisfied(distinct func(key string) int) error {
	for _, r := range rs.reqs {
		if r.minValues == 0 {
			continue
		}
		if n := distinct(r.key); n < r.minValues {
			return &MinValuesError{Key: r.key, MinValues: r.minValues, Available: n}
		}
	}
	return nil
}

// MinValuesSatisfiedBy is MinValuesSatisfied where the available values are
// those of the candidates (one Requirements per remaining instance type or
// offering): for each key with minValues it counts the distinct values that
// appear in some candidate's finite requirement for the key and that rs
// allows. A candidate that leaves the key unconstrained or holds a
// complement contributes no countable value.
func (rs Requirements) MinValuesSatisfiedBy(candidates []Requirements) error {
	var seen []string
	return rs.MinValuesSatisfied(func(key string) int {
		allowed := rs.Get(key)
		seen = seen[:0]
		for _, c := range candidates {
			cr := c.Get(key)
			if cr == nil || cr.complement {
				continue
			}
			for _, v := range cr.values {
				if allowed.Has(v) {
					seen = append(seen, v)
				}
			}
		}
		slices.Sort(seen)
		return len(slices.Compact(seen))
	})
}
