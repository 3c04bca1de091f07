package cmdutil

import (
	"errors"
	"fmt"
)

// Exit codes shared by every dovetail command.
const (
	ExitOK       = 0 // the command did its job
	ExitError    = 1 // an internal or environmental failure
	ExitBadInput = 2 // the user's input (flags, files) was wrong; nothing was changed
)

// BadInputError marks an error caused by the user's input: a flag, a file, a
// document. Commands return it (wrapped or not) to exit with ExitBadInput.
type BadInputError struct{ Err error }

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

// BadInput wraps err as a BadInputError; a nil err stays nil.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &BadInputError{Err: err}
}

// BadInputf formats a BadInputError.
func BadInputf(format string, args ...any) error {
	return &BadInputError{Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var bad *BadInputError
	if errors.As(err, &bad) {
		return ExitBadInput
	}
	return ExitError
}
