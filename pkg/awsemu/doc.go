// Package awsemu is dovetail's local AWS: one HTTP server on loopback that
// speaks the real wire protocols of the AWS APIs dovetail uses, so the
// unmodified aws-sdk-go-v2 (and the AWS CLI, boto3) can be pointed at it with
// AWS_ENDPOINT_URL. It is the cloud of `dovetail local up` and of every test
// of the AWS provider.
//
// See ExampleStart for launching an instance through the SDK.
//
// # Services and protocols
//
//   - EC2 (EC2 query protocol, XML): DescribeInstanceTypes,
//     DescribeInstanceTypeOfferings, DescribeAvailabilityZones,
//     DescribeVpcs, DescribeSubnets, DescribeSecurityGroups, DescribeImages,
//     DescribeSpotPriceHistory, CreateLaunchTemplate,
//     DescribeLaunchTemplates, DeleteLaunchTemplate, CreateFleet (instant),
//     DescribeInstances, TerminateInstances, CreateTags,
//     CreateCapacityReservation, DescribeCapacityReservations,
//     CancelCapacityReservation, DescribeCapacityBlockOfferings,
//     PurchaseCapacityBlock.
//   - IAM (awsQuery, XML): GetInstanceProfile, CreateInstanceProfile,
//     AddRoleToInstanceProfile, RemoveRoleFromInstanceProfile,
//     DeleteInstanceProfile, TagInstanceProfile, ListInstanceProfiles.
//   - SSM (JSON 1.1): GetParameter, GetParameters.
//   - SQS (JSON 1.0, awsQuery-compatible error codes): GetQueueUrl,
//     SendMessage, ReceiveMessage (long polling), DeleteMessage.
//   - Pricing (JSON 1.1): GetProducts.
//   - EKS (REST JSON): DescribeCluster, ListClusters.
//
// A request is routed by its protocol: X-Amz-Target for the JSON protocols,
// the /clusters path for EKS, and for the query protocols the SigV4
// credential scope's service name (or the API Version parameter).
// Credentials are accepted without checking signatures and never logged.
// Errors use each protocol's shape and AWS's codes (InvalidInstanceID.NotFound,
// NoSuchEntity, ParameterNotFound, AWS.SimpleQueueService.NonExistentQueue,
// InvalidParameterValue, ValidationError, ...); throttles are
// RequestLimitExceeded (EC2, HTTP 503), Throttling (IAM), RequestThrottled
// (SQS) and ThrottlingException (the others), all of which the SDK's retryer
// classifies as throttles.
//
// # The seeded account
//
// Start creates, for Options.ClusterName (NAME): a VPC; a subnet in each of
// the region's first three zones (Options.Zones chooses how many) and a
// node security group, tagged karpenter.sh/discovery=NAME and
// kubernetes.io/cluster/NAME=owned; EKS
// AL2023 (standard, nvidia, neuron), AL2 and Bottlerocket images for x86_64
// and arm64 in three dated versions, published through the EKS SSM alias
// parameters of Options.KubernetesVersion (the AL2023 standard images are
// also tagged role=NAME); the node role KarpenterNodeRole-NAME; the
// interruption queue NAME; and the EKS cluster NAME. Instance types, zones,
// offerings and prices come from the built-in catalog (pkg/catalog), spot
// prices from catalog.SpotPrice.
//
// # Deterministic rules
//
//   - CreateFleet (type instant only) expands each launch-template config's
//     overrides into candidates (type, subnet/zone, image) and launches
//     TotalTargetCapacity instances of the cheapest launchable candidate at
//     the default target capacity type's price, for every allocation
//     strategy; ties go to the smaller type name, then zone, then request
//     order. A candidate that cannot launch (injected insufficient capacity,
//     type not offered in the zone or not sold as that capacity type, image
//     architecture mismatch, spot price above MaxPrice) is reported in the
//     response's Errors with its LaunchTemplateAndOverrides
//     (InsufficientInstanceCapacity, Unsupported, ...). With no launchable
//     candidate the answer has errors only.
//   - Instances go pending -> running after 1 s plus a seeded 0-1 s, and
//     shutting-down -> terminated after 1 s; terminated instances stay
//     visible for 5 minutes. Every delay is multiplied by Options.TimeScale
//     and measured on Options.Clock.
//   - Capacity reservations (reservations.go): an on-demand launch goes
//     into the reservation its launch template's
//     CapacityReservationSpecification targets (which must be active, of
//     its type and zone, with room, or the launch fails with
//     ReservationCapacityExceeded), else, unless the preference is none,
//     into the oldest open reservation of its type and zone with room
//     (capacity-reservations-only fails without one). Pending and running
//     instances hold a slot; DescribeInstances reports capacityReservationId.
//     A cancelled or expired (limited, at its EndDate on Options.Clock)
//     reservation takes no launches; its instances keep running.
//   - Capacity Blocks (capacityblocks.go): offerings per zone, purchased
//     as targeted reservations of type capacity-block; launches into one
//     need the market type capacity-block. 40 minutes before its end the
//     expiration warning goes on the interruption queue, 30 minutes before
//     its instances start terminating and it takes no launches, at its end
//     it expires (on Options.Clock, not scaled).
//   - Ids, addresses and boot jitter come from Options.Seed, so the same
//     calls give the same answers.
//   - SetThrottle(fraction, seed) throttles each call with probability
//     fraction, drawn from a generator seeded with seed, in call order.
//
// # Introspection and faults
//
// Calls records every API call (as an IAM action such as ec2:CreateFleet)
// with its error code; InjectICE, LimitCapacity (n more launches, then
// ICE: a fleet asking for more gets fewer instances and the offering's
// error), SetThrottle and ClearFaults inject
// faults; ScheduleEvent and SetStatusCheck set the scheduled events and
// failed status checks DescribeInstanceStatus reports; AddSubnet and
// ReserveAddresses shape the subnets (tests); Interrupt puts EventBridge-format interruption messages on the
// queue; Instances and Subscribe expose instance state. The same controls
// are served as JSON under /_dovetail/ for `dovetail local fault` and
// `dovetail local interrupt` (see AdminClient), guarded by a bearer token
// (Emulator.AdminToken) and a check that the Host header is the loopback
// address the emulator listens on (against DNS rebinding).
//
// # Using the AWS CLI
//
//	export AWS_ENDPOINT_URL=http://127.0.0.1:PORT AWS_REGION=us-east-1
//	export AWS_ACCESS_KEY_ID=dummy AWS_SECRET_ACCESS_KEY=dummy
//	aws ec2 describe-subnets --filters Name=tag:karpenter.sh/discovery,Values=local
//
// Go clients should use HTTPClient (or AWSConfig), which avoids a request
// body race in aws-sdk-go-v2 that a fast loopback server triggers.
//
// # Related packages
//
// userdata parses launch-template user data (nodeadm, Bottlerocket,
// bootstrap.sh); kubenode boots a kwok-managed Node for every running
// instance; localaws runs both inside `dovetail local up` and writes
// DIR/aws.env. docs/emulator.md is the user-facing description.
package awsemu
