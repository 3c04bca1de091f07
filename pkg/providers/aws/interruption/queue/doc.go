// Package queue is a small wrapper around the interruption SQS queue:
// long-poll receive and delete, with message bodies parsed by package
// messages. The controller that acts on the messages lives elsewhere; this
// package only talks to SQS.
//
// See TestEmulatorInterruptions: every interruption kind the local emulator
// can raise arrives here and parses into the matching message kind.
package queue
