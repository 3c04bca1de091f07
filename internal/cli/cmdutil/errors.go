package cmdutil

import (
	"errors"
	"fmt"
	"io"

	"github.com/dovetail-sh/dovetail/pkg/termtext"
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

// PrintError writes a command's error for a person: "error: " and the
// message, escaped and capped (termtext.Message), so a refused 10 MiB
// value or a name with escape sequences is neither printed whole nor
// acted on by the terminal.
func PrintError(w io.Writer, err error) {
	fmt.Fprintln(w, "error:", termtext.Message(err.Error()))
}

// Warn writes a warning the same way.
func Warn(w io.Writer, msg any) {
	fmt.Fprintln(w, "warning:", termtext.Message(fmt.Sprint(msg)))
}
