package engine

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReasonCode is the stable, machine-readable reason a pod cannot be placed.
// Codes never change meaning; messages may be reworded.
type ReasonCode string

// Reason codes, from the most basic to the most specific. When several apply
// the engine reports the first one it meets in this order.
const (
	// NoCompatibleNodePool: no NodePool's requirements, labels and taints
	// admit the pod (the message names each pool's failing key or taint).
	NoCompatibleNodePool ReasonCode = "NoCompatibleNodePool"
	// Unsupported: the only NodePools that could take the pod use something
	// dovetail does not provision yet, or the pod asks for something the
	// engine does not model.
	Unsupported ReasonCode = "Unsupported"
	// ResourcesExceedAllTypes: no instance type of a compatible NodePool can
	// hold the pod's requests next to the daemonset overhead.
	ResourcesExceedAllTypes ReasonCode = "ResourcesExceedAllTypes"
	// NoAvailableOffering: instance types fit, but none has an available
	// offering in the zones and capacity types the pod and pool allow.
	NoAvailableOffering ReasonCode = "NoAvailableOffering"
	// VolumeZoneConflict: the zones the pod's volumes allow have no usable
	// offering (or conflict with the pod's other constraints).
	VolumeZoneConflict ReasonCode = "VolumeZoneConflict"
	// NodePoolLimitReached: every NodePool that could take the pod would go
	// over its limits.
	NodePoolLimitReached ReasonCode = "NodePoolLimitReached"
	// TopologySpreadUnsatisfiable: a DoNotSchedule topology spread
	// constraint cannot be met by any placement.
	TopologySpreadUnsatisfiable ReasonCode = "TopologySpreadUnsatisfiable"
	// AffinityUnsatisfiable: a required pod affinity term has no domain with
	// a matching pod that can still take the pod.
	AffinityUnsatisfiable ReasonCode = "AffinityUnsatisfiable"
	// AntiAffinityConflict: required pod anti-affinity (the pod's own, or an
	// existing pod's against it) rules out every domain.
	AntiAffinityConflict ReasonCode = "AntiAffinityConflict"
	// HostPortConflict: the pod's host ports are taken on every node it
	// could use, and no new node can be made for it.
	HostPortConflict ReasonCode = "HostPortConflict"
	// MinValuesUnsatisfiable: the pool's minValues cannot be kept for any
	// node that holds the pod.
	MinValuesUnsatisfiable ReasonCode = "MinValuesUnsatisfiable"
)

// ErrInvalidInput is wrapped by every error Solve returns: the input is
// malformed. errors.As gives the *InputError with the field paths.
var ErrInvalidInput = errors.New("engine: invalid input")

// InputError lists everything malformed in an Input, each entry naming the
// object and the field ("pods[3] (default/web-1).spec.containers[0]...").
type InputError struct {
	Errs field.ErrorList
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%v: %v", ErrInvalidInput, e.Errs.ToAggregate())
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }
