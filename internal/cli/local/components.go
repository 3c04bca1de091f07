package local

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

// defaultComponents lists what `local up` starts after the control plane,
// in order: the AWS emulator (with its node booter), then the controller
// as a child process under its own ServiceAccount identity (package
// ctrlproc). Each is a stack.Component (Start returns once it is ready,
// Stop ends it).
func defaultComponents() []stack.Component {
	aws := localaws.New()
	ctrl := &ctrlproc.Component{
		RBAC:      rbac.Manifests(),
		TimeScale: func() float64 { return aws.TimeScale },
	}
	return []stack.Component{aws, controllerFlags{ctrl}}
}

// controllerFlags adds the controller's flags to `local up`.
type controllerFlags struct{ *ctrlproc.Component }

func (c controllerFlags) AddFlags(fs *pflag.FlagSet) {
	c.Replicas = 1
	fs.Var(replicasValue{c.Component}, "controller-replicas", "controller processes to run (more than one elect a leader; 0: none, to run another controller against the stack)")
}

// NoController reports whether --controller-replicas 0 was given.
func (c controllerFlags) NoController() bool { return c.None }

// replicasValue is --controller-replicas: a count, 0 meaning no controller.
type replicasValue struct{ c *ctrlproc.Component }

func (v replicasValue) String() string {
	if v.c == nil {
		return "1"
	}
	if v.c.None {
		return "0"
	}
	return strconv.Itoa(v.c.Replicas)
}

func (v replicasValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a count, 0 or more (0: no controller)", s)
	}
	v.c.None, v.c.Replicas = n == 0, n
	return nil
}

func (v replicasValue) Type() string { return "int" }

// addComponentFlags lets components that have flags (such as the AWS
// emulator's --time-scale) register them on `local up`.
func addComponentFlags(fs *pflag.FlagSet, components []stack.Component) {
	for _, c := range components {
		if f, ok := c.(interface{ AddFlags(*pflag.FlagSet) }); ok {
			f.AddFlags(fs)
		}
	}
}
