package local

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
	"github.com/dovetail-sh/dovetail/pkg/local/standin"
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
	return []stack.Component{aws, controllerFlags{ctrl}, deploymentFlags{&standin.Component{Controller: ctrl}}}
}

// deploymentFlags adds --controller-deployment to `local up`.
type deploymentFlags struct{ *standin.Component }

func (d deploymentFlags) AddFlags(fs *pflag.FlagSet) {
	fs.Var(d.Component, "controller-deployment", "also keep a Deployment NAMESPACE/NAME standing for the controller: changing its pod template's env (kubectl set env, rollout restart) restarts the controller with it, and the Lease NAME-leader-election names its newest pod (for tools written against a controller Deployment, such as the peer's e2e suites: kube-system/karpenter)")
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

// componentFlagErrors refuses bad component flags before anything starts:
// those a component's Validate refuses (such as the AWS emulator's --zones
// beyond the region's zones), and those that contradict each other (a
// controller Deployment stands for a controller, so it needs one).
func componentFlagErrors(components []stack.Component) error {
	for _, c := range components {
		if v, ok := c.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return cmdutil.BadInput(err)
			}
		}
	}
	var noController, deployment bool
	for _, c := range components {
		switch c := c.(type) {
		case controllerFlags:
			noController = c.None
		case deploymentFlags:
			deployment = c.Enabled()
		}
	}
	if noController && deployment {
		return cmdutil.BadInputf("--controller-deployment stands for the stack's controller: it needs --controller-replicas 1 or more, not 0")
	}
	return nil
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
