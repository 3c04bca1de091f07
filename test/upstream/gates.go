package main

import (
	"slices"
	"strconv"
	"strings"
)

// groupGates are the feature gates each spec group (the suite's outermost
// Describe) runs with, as the peer's own e2e clusters turn them on for
// these specs. Groups not listed run with dovetail's defaults. A gate that
// dovetail refuses makes the stack fail to start, which the results table
// shows as the spec's failure (and the expectations file as its reason).
var groupGates = map[string][]string{
	"StaticCapacity": {"StaticCapacity=true"},
	"CapacityBuffer": {"CapacityBuffer=true"},
	"Repair":         {"NodeRepair=true"},
	"Reboot":         {"NodeRepair=true"},
	// The specs' at-limit pools are static; the specs add NodeRepair and
	// the TerminateFirst gates themselves (through the stand-in).
	"TerminateFirst": {"StaticCapacity=true"},
}

// groupAWSGates are the AWS provider gates (AWS_FEATURE_GATES) a group runs
// with: the Reboot specs need repair by reboot, which the peer's AWS
// provider keeps behind RebootForRepair.
var groupAWSGates = map[string][]string{
	"Reboot": {"RebootForRepair=true"},
}

// groupDeployment are the groups whose specs read and patch the peer's
// controller Deployment (kube-system/karpenter: its env, its rollout, its
// pod holding karpenter-leader-election; DefaultTopologySpreadConstraints
// sets SCHEDULER_CONFIG there); their stacks run with `local up
// --controller-deployment kube-system/karpenter` (package standin).
var groupDeployment = map[string]bool{
	"TerminateFirst":                   true,
	"DefaultTopologySpreadConstraints": true,
}

// groupSchedulerConfig are the groups that need the cluster's
// kube-scheduler to run the suite's configuration (a profile with
// PodTopologySpread defaults) and to show a kube-scheduler Pod naming it:
// their stacks run with `local up --scheduler-config` and the suite's
// testdata file.
var groupSchedulerConfig = map[string]bool{
	"DefaultTopologySpreadConstraints": true,
}

// groupZones are the groups whose specs need more zones than the emulated
// VPC's default 3: their stacks run with `local up --zones N`.
// DefaultTopologySpreadConstraints places 4 pods one per zone ("no more
// than the number of zones the provider offers").
var groupZones = map[string]int{
	"DefaultTopologySpreadConstraints": 4,
}

// controllerDeployment is the --controller-deployment value of a group's
// stack, or "" for none.
func controllerDeployment(group string) string {
	if groupDeployment[group] {
		return "kube-system/karpenter"
	}
	return ""
}

// upFlags are the `local up` flags a group's stack gets beyond --dir and
// --cluster-name: --controller-deployment (groupDeployment),
// --scheduler-config with schedulerConfig, the suite's kube-scheduler
// configuration (groupSchedulerConfig; left out when "") and --zones
// (groupZones).
func upFlags(group, schedulerConfig string) []string {
	var args []string
	if d := controllerDeployment(group); d != "" {
		args = append(args, "--controller-deployment", d)
	}
	if groupSchedulerConfig[group] && schedulerConfig != "" {
		args = append(args, "--scheduler-config", schedulerConfig)
	}
	if n := groupZones[group]; n > 0 {
		args = append(args, "--zones", strconv.Itoa(n))
	}
	return args
}

// awsFeatureGates is the AWS_FEATURE_GATES value of a group's controller,
// or "" for dovetail's defaults.
func awsFeatureGates(group string) string {
	g := slices.Clone(groupAWSGates[group])
	slices.Sort(g)
	return strings.Join(g, ",")
}

// featureGates is the FEATURE_GATES value of a group's controller, or ""
// for dovetail's defaults.
func featureGates(group string) string {
	g := slices.Clone(groupGates[group])
	slices.Sort(g)
	return strings.Join(g, ",")
}
