package apireq

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Convert turns API requirements (with minValues) into Requirements; a
// second requirement on the same key intersects with the first. Errors
// carry path.Index(i) and name the key, operator and values.
func Convert(reqs []karpv1.NodeSelectorRequirementWithMinValues, path *field.Path) (requirements.Requirements, field.ErrorList) {
	var errs field.ErrorList
	var out requirements.Requirements
	for i, r := range reqs {
		values := r.Values
		if r.Operator == karpv1.NodeSelectorOpExists || r.Operator == karpv1.NodeSelectorOpDoesNotExist {
			// Values mean nothing with these operators; the CRD lets them
			// through (as the peer's does) and they are ignored, as the
			// peer ignores them.
			values = nil
		}
		req, err := requirements.New(r.Key, requirements.Operator(r.Operator), values, r.MinValues)
		if err != nil {
			errs = append(errs, field.Invalid(path.Index(i), fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values), err.Error()))
			continue
		}
		out.Add(req)
	}
	return out, errs
}

// NodeClaim converts a NodeClaim's spec.requirements; the error (nil when
// every requirement parses) names the failing field paths.
func NodeClaim(nc *karpv1.NodeClaim) (requirements.Requirements, error) {
	out, errs := Convert(nc.Spec.Requirements, field.NewPath("spec", "requirements"))
	return out, errs.ToAggregate()
}

// NodePool converts a NodePool's spec.template.spec.requirements.
func NodePool(np *karpv1.NodePool) (requirements.Requirements, error) {
	out, errs := Convert(np.Spec.Template.Spec.Requirements, field.NewPath("spec", "template", "spec", "requirements"))
	return out, errs.ToAggregate()
}

// OrderedValues returns the values the In expressions on key list, in the
// order they are written (first occurrence wins), and whether there was an
// In expression on key at all. The provisioner writes a NodeClaim's
// instance-type options this way, most preferred first; the algebra keeps
// values sorted, so the order is read here.
func OrderedValues(reqs []karpv1.NodeSelectorRequirementWithMinValues, key string) ([]string, bool) {
	var out []string
	found := false
	seen := map[string]bool{}
	for _, r := range reqs {
		if r.Key != key || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		found = true
		for _, v := range r.Values {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out, found
}
