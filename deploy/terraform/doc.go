// Package terraform holds the Terraform/OpenTofu module for what dovetail
// needs in AWS (see README.md) and its Go test. The AWS provider cannot be
// fetched here, so the test parses the module with hashicorp/hcl/v2 and
// checks that every reference resolves, that the controller's policies are
// docs/iam's generated documents (and fit IAM's limit), that the queue
// policy admits only this account's rules, and that the EventBridge
// patterns match the four kinds of message the controller parses.
// `make tofu-fmt` runs `tofu fmt -check` with OpenTofu built by tools/tofu.
//
// Must not: hold Go code used at run time.
package terraform
