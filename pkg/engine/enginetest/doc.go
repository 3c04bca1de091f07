// Package enginetest holds test support for the engine and its users: an
// independent checker of plans (CheckPlan) that uses only the engine's
// public types and Kubernetes' own scheduling helpers, never engine
// internals.
//
// It is imported by tests only; production code must not import it.
package enginetest
