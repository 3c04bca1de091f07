package disruption

import (
	"cmp"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// StaticNode is one NodeClaim of a static pool (spec.replicas) as
// ScaleDown sees it.
type StaticNode struct {
	// NodeClaim is its name.
	NodeClaim string
	// Launched: the NodeClaim has an instance (status.providerID).
	Launched bool
	// Pods are the pods bound to its node, daemonset pods included.
	Pods []*corev1.Pod
	// Created is when the NodeClaim was created; with ExpireAfter it gives
	// the share of lifetime left that weights the disruption cost.
	Created time.Time
}

// ScaleDownInput is a static pool's NodeClaims that are not being deleted,
// and how many of them are to go.
type ScaleDownInput struct {
	Nodes []StaticNode
	Count int
	// Now is the time do-not-disrupt durations and lifetimes are read at.
	Now time.Time
	// ExpireAfter is the pool's node lifetime (nil: Never).
	ExpireAfter *time.Duration
}

// ScaleDownPick is one NodeClaim chosen to go, and why it ranks where it does.
type ScaleDownPick struct {
	NodeClaim string
	// Rank: NotLaunched, Empty, Cheapest or DoNotDisrupt.
	Rank string
	// Cost is the disruption cost (0 for the first two ranks).
	Cost float64
}

// ScaleDown ranks.
const (
	RankNotLaunched  = "NotLaunched"
	RankEmpty        = "Empty"
	RankCheapest     = "CheapestToDisrupt"
	RankDoNotDisrupt = "DoNotDisrupt"
)

// ScaleDown chooses which Count NodeClaims of a static pool to remove when
// its replicas go down: first those with no instance yet, then empty ones
// (only daemonset pods or finished pods, none with an active
// karpenter.sh/do-not-disrupt), then the rest by disruption cost (the
// eviction costs of their pods times the share of lifetime left, as
// consolidation ranks them), nodes with an active do-not-disrupt pod last.
// Ties go by name, so the choice is stable. The removal itself drains
// gracefully (PDBs, terminationGracePeriod): ScaleDown only chooses.
func ScaleDown(in ScaleDownInput) []ScaleDownPick {
	if in.Count <= 0 {
		return nil
	}
	rank := map[string]int{RankNotLaunched: 0, RankEmpty: 1, RankCheapest: 2, RankDoNotDisrupt: 3}
	all := make([]ScaleDownPick, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		all = append(all, classify(n, in.Now, in.ExpireAfter))
	}
	slices.SortFunc(all, func(a, b ScaleDownPick) int {
		if c := cmp.Compare(rank[a.Rank], rank[b.Rank]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Cost, b.Cost); c != 0 {
			return c
		}
		return cmp.Compare(a.NodeClaim, b.NodeClaim)
	})
	return all[:min(in.Count, len(all))]
}

func classify(n StaticNode, now time.Time, expireAfter *time.Duration) ScaleDownPick {
	if !n.Launched {
		return ScaleDownPick{NodeClaim: n.NodeClaim, Rank: RankNotLaunched}
	}
	cost, workload, blocked := 0.0, 0, false
	for _, pod := range n.Pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, ok := doNotDisruptAt(pod, now); ok {
			blocked = true
		}
		if ownedByDaemonSet(pod) {
			continue
		}
		workload++
		cost += EvictionCost(pod)
	}
	switch {
	case blocked:
		return ScaleDownPick{NodeClaim: n.NodeClaim, Rank: RankDoNotDisrupt, Cost: cost * lifeLeft(n.Created, now, expireAfter)}
	case workload == 0:
		return ScaleDownPick{NodeClaim: n.NodeClaim, Rank: RankEmpty}
	}
	return ScaleDownPick{NodeClaim: n.NodeClaim, Rank: RankCheapest, Cost: cost * lifeLeft(n.Created, now, expireAfter)}
}

// lifeLeft is the share of the node's lifetime left, in [0, 1] (1 without
// a lifetime or a creation time).
func lifeLeft(created, now time.Time, ea *time.Duration) float64 {
	if ea == nil || *ea <= 0 || created.IsZero() {
		return 1
	}
	left := created.Add(*ea).Sub(now)
	return math.Max(0, math.Min(1, float64(left)/float64(*ea)))
}

func ownedByDaemonSet(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
