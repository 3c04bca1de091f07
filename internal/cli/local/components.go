package local

import (
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
	fs.IntVar(&c.Replicas, "controller-replicas", 1, "controller processes to run (more than one elect a leader)")
}

// addComponentFlags lets components that have flags (such as the AWS
// emulator's --time-scale) register them on `local up`.
func addComponentFlags(fs *pflag.FlagSet, components []stack.Component) {
	for _, c := range components {
		if f, ok := c.(interface{ AddFlags(*pflag.FlagSet) }); ok {
			f.AddFlags(fs)
		}
	}
}
