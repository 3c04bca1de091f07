// Package fake is an in-memory implementation of cloudprovider.CloudProvider
// for unit tests of dovetail's own controllers.
//
// It keeps the contract of the real provider: Create launches the cheapest
// available offering the NodeClaim's requirements allow (price, then type
// name, then zone), returns *InsufficientCapacityError when only refused
// offerings remain, Delete and Get return *NodeClaimNotFoundError for unknown
// instances. Tests script it with SetInsufficientCapacity, SetDrifted and the
// Next...Err fields, and read back Calls and Instances.
//
// When not to use it: anything that claims to test AWS behaviour. AWS code is
// tested through aws-sdk-go-v2 against the local emulator (pkg/awsemu); this
// package fakes our own interface, never a cloud SDK.
package fake
