package snapshot

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrNodeClassNotFound is wrapped by the error Build and NodePool return
// when a NodePool's nodeClassRef names a node class the snapshot lacks.
var ErrNodeClassNotFound = errors.New("snapshot: node class not found")

// ErrInvalidObject is wrapped by the error returned for an object the
// engine cannot take (a requirement that does not parse, a nodeClassRef of
// an unknown kind, kubelet settings the allocatable model refuses).
var ErrInvalidObject = errors.New("snapshot: invalid object")

// NodeClassNotFoundError says which NodePool references which missing node
// class. errors.Is(err, ErrNodeClassNotFound) holds.
type NodeClassNotFoundError struct {
	NodePool  string
	Kind      string
	NodeClass string
}

func (e *NodeClassNotFoundError) Error() string {
	return fmt.Sprintf("NodePool %q references %s %q, which does not exist", e.NodePool, e.Kind, e.NodeClass)
}

// Is makes errors.Is(err, ErrNodeClassNotFound) true.
func (e *NodeClassNotFoundError) Is(target error) bool { return target == ErrNodeClassNotFound }

// InvalidObjectError lists what is wrong with one object, each entry with
// its field path (rooted at the object, e.g.
// spec.template.spec.requirements[2].values). errors.Is(err,
// ErrInvalidObject) holds.
type InvalidObjectError struct {
	// Kind and Name identify the object ("NodePool", "default").
	Kind, Name string
	Errs       field.ErrorList
}

func (e *InvalidObjectError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Kind, e.Name, e.Errs.ToAggregate())
}

// Is makes errors.Is(err, ErrInvalidObject) true.
func (e *InvalidObjectError) Is(target error) bool { return target == ErrInvalidObject }
