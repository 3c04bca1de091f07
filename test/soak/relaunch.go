package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/kubenode"
)

// relaunch is a NodeClaim that launched more than one instance: the
// controller was killed after its launch call and before it wrote the
// provider id, the next process launched again, and garbage collection
// terminated the first instance.
type relaunch struct {
	Claim  string `json:"nodeClaim"`
	Orphan string `json:"orphan"`
	// Lived is how long the orphan ran until it was shut down (0 when it
	// is still live: then it is also a leak).
	Lived time.Duration `json:"lived"`
	// KillAfter is how long after the orphan's launch the controller was
	// next killed (negative when no kill followed).
	KillAfter time.Duration `json:"killAfter"`
}

func (r relaunch) String() string {
	lived := "still live"
	if r.Lived > 0 {
		lived = "shut down after " + r.Lived.Round(time.Second).String()
	}
	kill := "no kill after its launch"
	if r.KillAfter >= 0 {
		kill = "a kill " + r.KillAfter.Round(100*time.Millisecond).String() + " after its launch"
	}
	return fmt.Sprintf("NodeClaim %s: orphan %s %s, %s", r.Claim, r.Orphan, lived, kill)
}

// relaunches finds, among every instance seen, the NodeClaims (by their
// karpenter.sh/nodeclaim tag) with more than one instance; the orphans
// are all but the last launched. kills are the moments of the kills.
func relaunches(all []awsemu.Instance, kills []time.Time) []relaunch {
	byClaim := map[string][]awsemu.Instance{}
	for _, in := range all {
		if tag := in.Tags[kubenode.TagNodeClaim]; tag != "" {
			byClaim[tag] = append(byClaim[tag], in)
		}
	}
	var out []relaunch
	for claim, ins := range byClaim {
		if len(ins) < 2 {
			continue
		}
		sort.Slice(ins, func(i, j int) bool { return ins[i].LaunchTime.Before(ins[j].LaunchTime) })
		for _, in := range ins[:len(ins)-1] {
			r := relaunch{Claim: claim, Orphan: in.ID, KillAfter: -1}
			switch in.State {
			case awsemu.StatePending, awsemu.StateRunning, awsemu.StateStopping, awsemu.StateStopped:
			default:
				r.Lived = in.StateChangeTime.Sub(in.LaunchTime)
			}
			for _, k := range kills {
				if !k.Before(in.LaunchTime) && (r.KillAfter < 0 || k.Sub(in.LaunchTime) < r.KillAfter) {
					r.KillAfter = k.Sub(in.LaunchTime)
				}
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Claim+out[i].Orphan < out[j].Claim+out[j].Orphan })
	return out
}
