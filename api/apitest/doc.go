// Package apitest checks dovetail's CRDs against a real kube-apiserver: the
// seed-shaped manifests in examples/ apply with kubectl and print the columns
// users know; invalid NodePools, NodeClaims and EC2NodeClasses are refused
// with errors that name the field; valid edge cases are accepted; defaults
// land as documented; and the Go types round-trip what the server stores.
//
// The package holds tests only (plus this file). One control plane, started
// by TestMain through controlplanetest.Main, serves every test; tests that
// create objects use their own names and clean up after themselves, while the
// validation tables use server-side dry runs.
package apitest
