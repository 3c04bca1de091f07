// Package instancetype lists what a node class can launch on EC2: every
// instance type from DescribeInstanceTypes, offered in the class's subnet
// zones (DescribeInstanceTypeOfferings), with on-demand prices from the
// Pricing API (the built-in catalog's table where the API has no price or
// fails), spot prices from DescribeSpotPriceHistory (the latest per type
// and zone), and capacity, overhead and labels computed by pkg/catalog's
// model for the class's kubelet settings and block devices.
//
// # Caching
//
// Types and offerings are read on first use (List waits for that) and
// again after TypeRefresh (default 6 h); prices after PriceRefresh
// (default 12 h). Those reloads run in the background: List keeps
// answering from the data it has, so a launch never waits for a refresh,
// and a failed refresh keeps the old data. Refresh reloads everything at
// once, synchronously. List results are
// cached per (kubelet settings, zones, architectures) until the data or
// the set of unavailable offerings changes, so a launch costs no API call.
//
// # Unavailable offerings
//
// Unavailable (a pkg/state/unavailable cache) remembers (type, zone,
// capacity type) triples EC2 refused for lack of capacity, for
// unavailable.DefaultTTL (3 minutes) by the injected
// clock; List reports them with Available false, so the scheduler and the
// next launch pick something else.
//
// # Invariants
//
//   - List results are shared and must not be modified; they are sorted
//     by name, and offerings by zone then capacity type.
//   - A type is listed only if an image of its architecture is in the
//     class's status and it has at least one priced offering.
//
// See TestMatchesCatalog: against the emulator (which serves the built-in
// catalog) the listed types equal catalog.InstanceTypes.
package instancetype
