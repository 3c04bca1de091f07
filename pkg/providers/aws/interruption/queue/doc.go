// Package queue is a small wrapper around the interruption SQS queue:
// long-poll receive and delete, with message bodies parsed by package
// messages. The controller that acts on the messages lives elsewhere; this
// package only talks to SQS.
//
// Receive drops messages about another account or region than the
// controller's (messages.CheckOrigin against Options.AccountID, by default
// the queue URL's account, and Options.Region, by default the SQS
// client's): each is logged, counted in
// dovetail_interruption_ignored_messages_total{reason} (Collectors) and
// deleted, so the controller never acts on another account's instances.
//
// See TestEmulatorInterruptions: every interruption kind the local emulator
// can raise arrives here and parses into the matching message kind.
package queue
