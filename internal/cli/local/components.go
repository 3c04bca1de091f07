package local

import (
	"github.com/spf13/pflag"

	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

// defaultComponents lists what `local up` starts after the control plane,
// in order. The AWS emulator and the controller join here as they land;
// each is a stack.Component (Start returns once it is ready, Stop ends it).
func defaultComponents() []stack.Component {
	return []stack.Component{localaws.New()}
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
