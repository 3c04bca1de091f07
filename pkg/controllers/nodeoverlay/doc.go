// Package nodeoverlay marks every NodeOverlay as not applied: dovetail
// installs and validates the peer's NodeOverlay CRD but does not apply
// overlays to instance types yet (the NodeOverlay feature gate is off and
// refused on). Each overlay gets Ready=False, reason NotSupported, with a
// message saying so, so `kubectl get overlays` shows it.
//
// On a cluster without the NodeOverlay CRD the controller is not
// registered (logged); it never fails the manager's start.
//
// What must not live here: applying overlays (that belongs to the
// scheduling core when the feature exists), and anything about
// CapacityBuffers, whose status the Cluster Autoscaler may own.
package nodeoverlay
