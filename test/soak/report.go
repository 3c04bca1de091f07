package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
)

// phaseResult is one phase's outcome.
type phaseResult struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Kills   int     `json:"kills"`
	// ClaimsMade are the NodeClaims created during the phase.
	ClaimsMade int    `json:"nodeClaimsMade"`
	Error      string `json:"error,omitempty"`
}

// report is the soak's figures and the checks that failed.
type report struct {
	mu sync.Mutex

	Seed    uint64        `json:"seed"`
	Dir     string        `json:"dir"`
	Seconds float64       `json:"seconds"`
	Phases  []phaseResult `json:"phases"`

	KillsWanted  int            `json:"killsWanted"`
	Kills        int            `json:"kills"`
	KillsByPhase map[string]int `json:"killsByPhase"`
	// Restart figures: from the kill until the new process was ready.
	RestartMeanSeconds float64 `json:"restartMeanSeconds"`
	RestartMaxSeconds  float64 `json:"restartMaxSeconds"`

	PeakPlanPrice  float64 `json:"peakPlanPricePerHour"`
	PeakPlanNodes  int     `json:"peakPlanNodes"`
	PeakFleetPrice float64 `json:"peakFleetPricePerHour"`
	PeakNodes      int     `json:"peakNodes"`
	ScaleUpSeconds float64 `json:"scaleUpSeconds"`
	Interrupted    int     `json:"interrupted"`

	PodsWanted     int `json:"podsWanted"`
	PodsRunning    int `json:"podsRunning"`
	PodsNotRunning int `json:"podsNotRunning"`

	Nodes             int      `json:"nodes"`
	ClaimsDeleting    int      `json:"claimsDeleting"`
	ClaimsCreated     int      `json:"claimsCreated"`
	InstancesLaunched int      `json:"instancesLaunched"`
	LiveInstances     int      `json:"liveInstances"`
	Leaked            []string `json:"leaked"`
	Dangling          []string `json:"dangling"`
	Duplicates        []string `json:"duplicates"`
	// Relaunches fail the soak: a NodeClaim's launch is idempotent (client
	// token, lookup by tag after a restart), so a kill between a launch
	// and its record must not launch a second instance.
	Relaunches []relaunch `json:"relaunches"`
	EmptyNodes []string   `json:"emptyNodes"`

	PDBViolations          int      `json:"pdbViolations"`
	ViolationDetails       []string `json:"violationDetails,omitempty"`
	PDBMaxUnavailable      string   `json:"pdbMaxUnavailable"`
	DrainedFromInterrupted int      `json:"podsEvictedFromInterruptedNodes"`
	LostToInterruptions    int      `json:"podsLostToInterruptions"`
	LostWithoutEviction    int      `json:"podsLostWithoutEviction"`
	LostDetails            []string `json:"lostDetails,omitempty"`

	FleetPrice    float64 `json:"fleetPricePerHour"`
	InstancePrice float64 `json:"instancePricePerHour"`
	PlanPrice     float64 `json:"simulatePricePerHour"`
	PlanNodes     int     `json:"simulateNodes"`
	CostGap       float64 `json:"costGap"`

	Failures []string `json:"failures"`
}

func (r *report) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func (r *report) print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(w, "--- soak report")
	for _, p := range r.Phases {
		status := "ok"
		if p.Error != "" {
			status = "FAILED: " + p.Error
		}
		fmt.Fprintf(w, "phase %-13s %6.0fs  %2d kills  %3d NodeClaims made  %s\n", p.Name, p.Seconds, p.Kills, p.ClaimsMade, status)
	}
	if r.PodsWanted == 0 {
		// Interrupted or failed before the measurement.
		for _, f := range r.Failures {
			fmt.Fprintf(w, "FAIL %s\n", f)
		}
		return
	}
	phases := make([]string, 0, len(r.KillsByPhase))
	for k := range r.KillsByPhase {
		phases = append(phases, fmt.Sprintf("%s %d", k, r.KillsByPhase[k]))
	}
	sort.Strings(phases)
	fmt.Fprintf(w, "controller SIGKILLs     %d of %d (%s); restart to ready %.1fs mean, %.1fs max\n",
		r.Kills, r.KillsWanted, strings.Join(phases, ", "), r.RestartMeanSeconds, r.RestartMaxSeconds)
	fmt.Fprintf(w, "peak                    500 pods Running in %.0fs on %d NodeClaims, $%.4f/h (simulate without ICE: %d nodes, $%.4f/h)\n",
		r.ScaleUpSeconds, r.PeakNodes, r.PeakFleetPrice, r.PeakPlanNodes, r.PeakPlanPrice)
	fmt.Fprintf(w, "spot interruptions      %d (their pods: %d evicted by the drain, %d lost with the instance)\n", r.Interrupted, r.DrainedFromInterrupted, r.LostToInterruptions)
	fmt.Fprintf(w, "pods Running at the end %d of %d (%d not Running)\n", r.PodsRunning, r.PodsWanted, r.PodsNotRunning)
	fmt.Fprintf(w, "leaked instances        %d (live instances %d, NodeClaims %d, NodeClaims without instance %d)\n",
		len(r.Leaked), r.LiveInstances, r.Nodes, len(r.Dangling))
	fmt.Fprintf(w, "duplicate NodeClaims    %d sharing an instance, %d empty at the end (%d NodeClaims made, %d instances launched in all)\n",
		len(r.Duplicates), len(r.EmptyNodes), r.ClaimsCreated, r.InstancesLaunched)
	fmt.Fprintf(w, "relaunched NodeClaims   %d (a second instance for a NodeClaim, e.g. after a kill between the launch and its record)\n", len(r.Relaunches))
	for _, rl := range r.Relaunches {
		fmt.Fprintf(w, "  %s\n", rl)
	}
	fmt.Fprintf(w, "PDB violations          %d (watched, PDBs maxUnavailable %s; pods lost without an eviction off interrupted nodes: %d)\n", r.PDBViolations, r.PDBMaxUnavailable, r.LostWithoutEviction)
	for _, d := range r.LostDetails {
		fmt.Fprintf(w, "  lost: %s\n", d)
	}
	fmt.Fprintf(w, "fleet                   $%.4f/h on %d NodeClaims (instances $%.4f/h); simulate $%.4f/h on %d; gap %+.1f%%\n",
		r.FleetPrice, r.Nodes, r.InstancePrice, r.PlanPrice, r.PlanNodes, 100*r.CostGap)
	fmt.Fprintf(w, "took                    %.0fs\n", r.Seconds)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAIL %s\n", f)
	}
}

func (r *report) writeJSON(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
