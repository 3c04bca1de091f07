package simulate

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// ErrBadInput is wrapped by every error about the user's input: a file
// that cannot be read, a document that does not parse, an unknown kind, an
// invalid object, a dangling reference. errors.As gives the *InputError.
var ErrBadInput = errors.New("simulate: bad input")

// InputError is one problem with the input, located as precisely as
// possible: the file (or "-" for stdin), the document in it (from 1; 0 when
// the problem concerns the file as a whole), the line the document starts
// on, and the object. Errs holds the field-level problems when there are
// any; Err the cause otherwise.
type InputError struct {
	File     string
	Document int
	Line     int
	// Kind and Name identify the object, when it got that far.
	Kind, Name string
	Errs       field.ErrorList
	Err        error
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Document > 0 {
		fmt.Fprintf(&b, " (document %d", e.Document)
		if e.Kind != "" {
			fmt.Fprintf(&b, ", %s", termtext.Clip(e.Kind, maxEchoed))
			if e.Name != "" {
				fmt.Fprintf(&b, " %q", termtext.Clip(e.Name, maxEchoed))
			}
		}
		b.WriteString(")")
	}
	b.WriteString(": ")
	switch {
	case len(e.Errs) > 0:
		msgs := make([]string, len(e.Errs))
		for i, fe := range e.Errs {
			msgs[i] = clipValue(fe).Error()
		}
		b.WriteString(strings.Join(msgs, "; "))
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString("invalid")
	}
	return b.String()
}

// maxEchoed is how much of a refused string value an error echoes.
const maxEchoed = 256

// clipValue returns fe with a long string value cut to maxEchoed bytes, so
// a refused 10 MiB label value is not echoed whole.
func clipValue(fe *field.Error) *field.Error {
	if s, ok := fe.BadValue.(string); ok && len(s) > maxEchoed {
		c := *fe
		c.BadValue = termtext.Clip(s, maxEchoed)
		return &c
	}
	return fe
}

// Is makes errors.Is(err, ErrBadInput) true.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// InputErrors is several input problems, reported together.
type InputErrors []*InputError

func (es InputErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Is makes errors.Is(err, ErrBadInput) true.
func (es InputErrors) Is(target error) bool { return target == ErrBadInput }

// Unwrap gives the individual errors to errors.Is/As.
func (es InputErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Origin is where an object was read from.
type Origin struct {
	File     string
	Document int
	Line     int
}

func (o Origin) errorf(kind, name string, errs field.ErrorList, err error) *InputError {
	return &InputError{File: o.File, Document: o.Document, Line: o.Line, Kind: kind, Name: name, Errs: errs, Err: err}
}
