package local

import stack "github.com/dovetail-sh/dovetail/pkg/local"

// defaultComponents lists what `local up` starts after the control plane,
// in order. The AWS emulator and the controller join here as they land;
// each is a stack.Component (Start returns once it is ready, Stop ends it).
func defaultComponents() []stack.Component {
	return nil
}
