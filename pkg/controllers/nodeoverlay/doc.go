// Package nodeoverlay writes each NodeOverlay's status.
//
// With the NodeOverlay feature gate on (Options.Enabled), every overlay is
// judged against every other and against every NodePool's instance types
// (the cloud provider's), with the same pure rules provisioning and
// disruption apply them by (pkg/overlay through snapshot.ApplyOverlays):
// Ready and ValidationSucceeded are True (reason Applied, with how many
// instance types it changes) or False with the reason RuntimeValidation
// (a field that does not parse), NegativePrice (an adjustment that would
// price a matched offering below zero), Conflict (an overlay of equal
// weight sets the same price or resource) or TooManyAdjustedTypes (it
// would pass overlay.MaxAdjustedTypes), the message naming the field.
// All overlays are evaluated in one reconcile, again when an overlay, a
// NodePool or an EC2NodeClass spec changes and every Resync.
//
// With the gate off every overlay gets Ready=False, reason FeatureGateOff:
// dovetail ignores overlays then, as the peer does.
//
// On a cluster without the NodeOverlay CRD the controller is not
// registered (logged); it never fails the manager's start.
//
// What must not live here: applying overlays (pkg/overlay, called by the
// controllers that plan), and anything about CapacityBuffers.
package nodeoverlay
