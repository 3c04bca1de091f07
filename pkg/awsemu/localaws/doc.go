// Package localaws plugs the AWS emulator (package awsemu) and its node
// booter (package kubenode) into `dovetail local up` as a local-stack
// Component (package local): after the control plane is ready it starts
// the emulator for the stack's cluster name, points EKS DescribeCluster at
// the control plane's API server and CA, boots a Node for every running
// instance, and writes DIR/aws.env:
//
//	AWS_ENDPOINT_URL=http://127.0.0.1:PORT
//	AWS_REGION=us-east-1 (and AWS_DEFAULT_REGION)
//	AWS_ACCESS_KEY_ID=dummy, AWS_SECRET_ACCESS_KEY=dummy
//	DOVETAIL_CLUSTER_NAME=NAME
//	DOVETAIL_INTERRUPTION_QUEUE=NAME
//
// so that `set -a; . DIR/aws.env` points the AWS CLI, boto3 or the
// controller at it. It also writes the emulator's admin token to
// DIR/aws-admin-token, mode 0600 (not to aws.env, which is world-readable).
// `dovetail local fault`, `local interrupt` and `local publish-image` find
// the emulator through both files (ReadEnv, ReadToken, Admin); ReadToken
// refuses a token file others can read. The emulator's log is
// DIR/aws-emulator/emulator.log. Invariant: DIR/aws.env and
// DIR/aws-admin-token exist exactly while the component runs.
package localaws
