package cmdutil

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

// SchedulerConfigFile reads --scheduler-config FILE of simulate and
// explain: the controller's SCHEDULER_CONFIG document
// ({podTopologySpread: {defaultConstraints: [...]}}), and returns its
// default spreads. "" means none. A file that cannot be read or does not
// validate is bad input naming the flag, the file and the field.
func SchedulerConfigFile(read func(string) ([]byte, error), path string) ([]corev1.TopologySpreadConstraint, error) {
	if path == "" {
		return nil, nil
	}
	data, err := read(path)
	if err != nil {
		return nil, BadInputf("--scheduler-config: %v", err)
	}
	c, err := spreaddefaults.Parse(data)
	if err != nil {
		return nil, BadInputf("--scheduler-config %s: %v", path, err)
	}
	return c.Constraints(), nil
}
