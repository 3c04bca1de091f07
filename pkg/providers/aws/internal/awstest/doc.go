// Package awstest starts the local AWS emulator (pkg/awsemu) for the AWS
// provider's tests and builds real aws-sdk-go-v2 configuration pointing at
// it. Nothing here fakes the SDK: every call goes over HTTP to the
// emulator.
package awstest
