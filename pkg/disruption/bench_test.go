package disruption_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

var benchClusters sync.Map

// benchCluster is a cluster of about nodes nodes at about 30 pods each: a
// reference-shaped workload (mixed deployments over the built-in catalog,
// with hostname spread on a share of them when spread is set) planned onto
// nodes sized to hold ~30 pods, materialized, then 40% of its pods deleted.
func benchCluster(b *testing.B, nodes int, spread bool) *engine.Input {
	key := fmt.Sprint(nodes, spread)
	if v, ok := benchClusters.Load(key); ok {
		return v.(*engine.Input)
	}
	m := workload.Mixed{Name: "bench", Seed: uint64(nodes), Pods: nodes * 30, DaemonSets: true, ZoneSpread: 0.3}
	if spread {
		m.HostSpread = 0.2
	}
	in := m.Input()
	// Cap node size so nodes hold about 30 pods (the catalog's largest
	// types would take hundreds).
	for i := range in.NodePools {
		var keep = in.NodePools[i].InstanceTypes[:0:0]
		for _, it := range in.NodePools[i].InstanceTypes {
			if c := it.Capacity[corev1.ResourceCPU]; c.Value() <= 32 {
				keep = append(keep, it)
			}
		}
		in.NodePools[i].InstanceTypes = keep
	}
	cl := cluster(b, in, 0.4, 7)
	benchClusters.Store(key, cl)
	return cl
}

// BenchmarkPlan is one full planner pass (all methods) with the default
// budgets (10% per pool) and the lower bound skipped; BenchmarkPlanOpen
// the same with budgets of 100%.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		for _, spread := range []bool{false, true} {
			b.Run(fmt.Sprintf("nodes=%d/hostspread=%v", n, spread), func(b *testing.B) {
				cl := benchCluster(b, n, spread)
				pp := open()
				pp.Budgets = nil
				runPlan(b, cl, pp)
			})
		}
	}
}

func BenchmarkPlanOpen(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { runPlan(b, benchCluster(b, n, false), open()) })
	}
}

func runPlan(b *testing.B, cl *engine.Input, pp disruption.PoolPolicy) {
	in := input(cl, pp)
	in.Options.SkipLowerBound = true
	pods := 0
	for _, en := range cl.Nodes {
		pods += len(en.Pods)
	}
	b.ReportAllocs()
	var plan *disruption.Plan
	b.ResetTimer()
	for b.Loop() {
		var err error
		plan, err = disruption.Compute(in)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	saved, disrupted := 0.0, 0
	for _, c := range plan.Commands {
		saved += c.SavingsPerHour
		disrupted += len(c.Nodes)
	}
	b.ReportMetric(float64(len(cl.Nodes)), "nodes")
	b.ReportMetric(float64(pods), "pods")
	b.ReportMetric(float64(len(plan.Commands)), "commands")
	b.ReportMetric(float64(disrupted), "disrupted")
	b.ReportMetric(saved, "saved$/h")
	b.ReportMetric(plan.FleetPricePerHour, "fleet$/h")
	b.ReportMetric(float64(plan.Stats.WhatIfs), "whatifs")
}
