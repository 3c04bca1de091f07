package awsemu

import (
	"errors"
	"fmt"
	"net/http"
)

// apiError is an AWS API error as the emulator answers it. Each protocol
// writer renders it in its own shape (EC2 <Response><Errors>, awsQuery
// <ErrorResponse>, JSON __type, REST X-Amzn-ErrorType).
type apiError struct {
	// Code is the error code the client sees (EC2/IAM) or the JSON error
	// shape name (SSM, SQS, Pricing, EKS).
	Code    string
	Message string
	// Status is the HTTP status; 400 when zero.
	Status int
	// QueryCode is the awsQuery-compatible code SQS sends in the
	// x-amzn-query-error header (e.g. AWS.SimpleQueueService.NonExistentQueue).
	QueryCode string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func (e *apiError) status() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

// fault is "Sender" for client errors and "Receiver" for server errors.
func (e *apiError) fault() string {
	if e.status() >= 500 {
		return "Receiver"
	}
	return "Sender"
}

func newAPIError(code string, status int, format string, args ...any) *apiError {
	return &apiError{Code: code, Status: status, Message: fmt.Sprintf(format, args...)}
}

// ec2ErrorStatus is the HTTP status EC2 answers an error code with when
// the code fails the whole request (RunInstances; CreateFleet lists the
// same codes per override instead): insufficient capacity and internal
// errors are server errors (500, which SDKs retry), the rest client
// errors (400).
func ec2ErrorStatus(code string) int {
	switch code {
	case "InsufficientInstanceCapacity", "InternalError":
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// Common EC2/IAM query-protocol errors.

func errInvalidParameterValue(param, value, why string) *apiError {
	return newAPIError("InvalidParameterValue", 400, "Value (%s) for parameter %s is invalid. %s", value, param, why)
}

func errMissingParameter(param string) *apiError {
	return newAPIError("MissingParameter", 400, "The request must contain the parameter %s", param)
}

func errInvalidParameterCombination(msg string) *apiError {
	return newAPIError("InvalidParameterCombination", 400, "%s", msg)
}

func errInvalidAction(service, action string) *apiError {
	return newAPIError("InvalidAction", 400, "The action %s is not valid for this web service (%s).", action, service)
}

// ErrUnknownTarget is returned by Interrupt when no instance has the given
// id or private DNS name.
var ErrUnknownTarget = errors.New("awsemu: no instance with that id or node name")

// ErrUnknownKind is returned by Interrupt for an unsupported interruption
// kind; the message lists the valid kinds.
var ErrUnknownKind = errors.New("awsemu: unknown interruption kind")
