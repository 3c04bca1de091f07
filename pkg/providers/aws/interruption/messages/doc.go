// Package messages parses the EventBridge events that reach dovetail's
// interruption queue into typed messages: which instances are affected and
// what is about to happen to them. It is pure: bytes in, a Message out.
//
// See ExampleParse.
//
// # Events and kinds
//
//	source    detail-type                                  Kind
//	aws.ec2   EC2 Spot Instance Interruption Warning       KindSpotInterruption
//	aws.ec2   EC2 Instance Rebalance Recommendation        KindRebalanceRecommendation
//	aws.ec2   EC2 Instance State-change Notification       KindStateChange (State says which)
//	aws.health AWS Health Event (category scheduledChange, service EC2)
//	                                                       KindScheduledChange
//
// Anything else that is well-formed JSON with a source and detail-type is
// KindUnknown (the caller deletes it from the queue and moves on); bodies
// that are not such JSON are an *Error wrapping ErrMalformed.
//
// # Origin
//
// Message.Account and Message.Region are the envelope's. CheckOrigin
// compares them with the controller's account and region and returns a
// *ForeignError (wrapping ErrForeign) when either differs: such a message
// reached the queue through a misrouted rule (another account's bus, a
// rule in another region) and its instances are not the controller's.
// Package queue ignores those messages; Parse itself does not check, so it
// stays usable without a configuration.
//
// # Invariants
//
//   - InstanceIDs are sorted and without duplicates; only ids of the form
//     i-<hex> are kept.
//   - Parse never panics (FuzzParse) and never reads a clock: the event's
//     own time is returned as Time.
package messages
