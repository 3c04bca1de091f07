package spreaddefaults

import (
	"bytes"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Config is the SCHEDULER_CONFIG document: the parts of the cluster's
// kube-scheduler configuration the simulation mirrors.
type Config struct {
	PodTopologySpread *PodTopologySpread `json:"podTopologySpread,omitempty"`
}

// PodTopologySpread mirrors kube-scheduler's PodTopologySpread plugin
// arguments with defaultingType List.
type PodTopologySpread struct {
	// DefaultConstraints are given to every pod that declares no
	// topologySpreadConstraints of its own and has a deduced selector.
	DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// Constraints returns the default constraints (nil for a nil Config or
// none configured).
func (c *Config) Constraints() []corev1.TopologySpreadConstraint {
	if c == nil || c.PodTopologySpread == nil {
		return nil
	}
	return c.PodTopologySpread.DefaultConstraints
}

// Parse decodes and validates a document. Empty (or only white space)
// means none: nil and no error. A document that does not decode (malformed,
// a field the format does not have, a key given twice; keys are
// case-sensitive) is an error; so is every rule
// Validate checks, as a field.ErrorList aggregate.
func Parse(raw []byte) (*Config, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	// Case-sensitive, as kube-scheduler reads its own configuration:
	// "maxskew" is an unknown field, not maxSkew.
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	c := &Config{}
	strict, err := sjson.UnmarshalStrict(js, c)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("decoding: %w", errors.Join(strict...))
	}
	if errs := c.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return c, nil
}

// Validate checks the rules kube-scheduler's PodTopologySpread arguments
// follow, so a document accepted here is one the cluster's scheduler takes
// too: maxSkew above 0; topologyKey set and a qualified name;
// whenUnsatisfiable DoNotSchedule or ScheduleAnyway; no labelSelector (it
// is deduced per pod); no matchLabelKeys (the deduced selector replaces
// it); no two constraints with the same topologyKey and whenUnsatisfiable.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	list := c.Constraints()
	base := field.NewPath("podTopologySpread", "defaultConstraints")
	for i, tsc := range list {
		p := base.Index(i)
		if tsc.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), tsc.MaxSkew, "must be greater than 0"))
		}
		if tsc.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "a node label key such as topology.kubernetes.io/zone"))
		} else if msgs := validation.IsQualifiedName(tsc.TopologyKey); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("topologyKey"), tsc.TopologyKey, msgs[0]))
		}
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule && tsc.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), tsc.WhenUnsatisfiable,
				[]string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}))
		}
		if tsc.LabelSelector != nil {
			errs = append(errs, field.Forbidden(p.Child("labelSelector"), "must not be set: the selector is deduced for each pod from the Services and the controller that select it"))
		}
		if len(tsc.MatchLabelKeys) > 0 {
			errs = append(errs, field.Forbidden(p.Child("matchLabelKeys"), "must not be set: it has no effect on default constraints (the deduced selector replaces it)"))
		}
		for j := range i {
			if list[j].TopologyKey == tsc.TopologyKey && list[j].WhenUnsatisfiable == tsc.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("{%s, %s} as [%d]", tsc.TopologyKey, tsc.WhenUnsatisfiable, j)))
				break
			}
		}
	}
	return errs
}
