package disruption

import "errors"

// Compute plans one disruption pass over in. The error is only for
// malformed input (naming the field); the same input gives the same plan.
func Compute(in *Input) (*Plan, error) {
	return nil, errors.New("disruption: planner not implemented yet")
}
