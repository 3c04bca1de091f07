package cloudprovider

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// OfferingKey names one offering: an instance type in a zone at a capacity
// type. It is comparable and usable as a map key.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

func (k OfferingKey) String() string {
	return k.InstanceType + "/" + k.Zone + "/" + k.CapacityType
}

// InsufficientCapacityError reports that no allowed offering had capacity.
// Offerings lists the offerings the cloud refused, sorted.
type InsufficientCapacityError struct {
	Offerings []OfferingKey
	Err       error
}

// NewInsufficientCapacityError builds the error with its offerings sorted.
func NewInsufficientCapacityError(err error, offerings ...OfferingKey) *InsufficientCapacityError {
	o := append([]OfferingKey(nil), offerings...)
	sort.Slice(o, func(i, j int) bool { return o[i].String() < o[j].String() })
	return &InsufficientCapacityError{Offerings: o, Err: err}
}

func (e *InsufficientCapacityError) Error() string {
	var b strings.Builder
	b.WriteString("insufficient capacity")
	if len(e.Offerings) > 0 {
		names := make([]string, len(e.Offerings))
		for i, o := range e.Offerings {
			names[i] = o.String()
		}
		fmt.Fprintf(&b, " for %s", strings.Join(names, ", "))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// IsInsufficientCapacity reports whether err is or wraps an
// InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// NodeClaimNotFoundError reports that a NodeClaim's instance does not exist
// (never launched, or already terminated).
type NodeClaimNotFoundError struct {
	ProviderID string
	Err        error
}

func (e *NodeClaimNotFoundError) Error() string {
	msg := "instance not found"
	if e.ProviderID != "" {
		msg += " for " + e.ProviderID
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// IsNodeClaimNotFound reports whether err is or wraps a NodeClaimNotFoundError.
func IsNodeClaimNotFound(err error) bool {
	var e *NodeClaimNotFoundError
	return errors.As(err, &e)
}

// IgnoreNodeClaimNotFound returns nil for a NodeClaimNotFoundError and err
// otherwise.
func IgnoreNodeClaimNotFound(err error) error {
	if IsNodeClaimNotFound(err) {
		return nil
	}
	return err
}

// NodeClassNotReadyError reports that a node class is not resolved yet (its
// subnets, images or instance profile are missing).
type NodeClassNotReadyError struct {
	NodeClass string
	Err       error
}

func (e *NodeClassNotReadyError) Error() string {
	msg := fmt.Sprintf("node class %q is not ready", e.NodeClass)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// IsNodeClassNotReady reports whether err is or wraps a NodeClassNotReadyError.
func IsNodeClassNotReady(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// CreateError is a launch failure other than insufficient capacity. Reason is
// a CamelCase word for the NodeClaim's Launched condition.
type CreateError struct {
	Reason string
	Err    error
}

func (e *CreateError) Error() string {
	if e.Err == nil {
		return "launch failed (" + e.Reason + ")"
	}
	return "launch failed (" + e.Reason + "): " + e.Err.Error()
}

func (e *CreateError) Unwrap() error { return e.Err }
