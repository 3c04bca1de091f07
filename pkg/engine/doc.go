// Package engine is dovetail's scheduling core: given a snapshot of pending
// pods, existing nodes, in-flight NodeClaims, DaemonSets and NodePools, it
// plans where every pod goes and which new nodes to launch.
package engine
