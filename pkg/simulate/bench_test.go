package simulate_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// BenchmarkReadAndExpand measures reading 1,000 pod documents and 100
// Deployments of 10 replicas (2,000 pods in all) and expanding them.
func BenchmarkReadAndExpand(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(nodeClassDoc + "---\n" + poolDoc)
	for i := range 1000 {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d, labels: {app: a%d}}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 128Mi}}}]}\n", i, i%7)
	}
	for i := range 100 {
		fmt.Fprintf(&sb, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d%d}\nspec:\n  replicas: 10\n  selector: {matchLabels: {app: d%d}}\n  template:\n    metadata: {labels: {app: d%d}}\n    spec: {containers: [{name: c, resources: {requests: {cpu: 250m}}}]}\n", i, i, i)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		m := &simulate.Manifests{}
		if err := m.Read("bench.yaml", data); err != nil {
			b.Fatal(err)
		}
		c, _, err := m.Cluster()
		if err != nil || len(c.Pods) != 2000 {
			b.Fatalf("%v, %d pods", err, len(c.Pods))
		}
	}
}

// BenchmarkEndToEnd100k measures what `dovetail simulate -o json` does with
// one Deployment of 100,000 replicas over the example NodePools and the
// built-in catalog: read, expand and snapshot (Input), engine.Solve, and
// the JSON rendering, and reports the whole (e2e-s, without the solve's
// own share counted twice) against the solve alone (solve-s) as ratio,
// the target being at most 2. Run with
//
//	go test ./pkg/simulate -run XX -bench EndToEnd100k -benchtime 3x
func BenchmarkEndToEnd100k(b *testing.B) {
	var data []byte
	for _, f := range []string{"ec2nodeclass.yaml", "nodepool-arm64-default.yaml", "nodepool-multi-default.yaml"} {
		doc, err := os.ReadFile("../../examples/" + f)
		if err != nil {
			b.Fatal(err)
		}
		data = append(append(data, doc...), "\n---\n"...)
	}
	data = append(data, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 100000\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 250m, memory: 512Mi}}}]}\n"...)
	var read, solve, render, cpuAll, cpuSolve time.Duration
	for b.Loop() {
		c0, t0 := cpuTime(), time.Now()
		m := &simulate.Manifests{}
		if err := m.Read("in.yaml", data); err != nil {
			b.Fatal(err)
		}
		in, _, err := simulate.Input(m, simulate.Options{Region: "us-east-1"})
		if err != nil {
			b.Fatal(err)
		}
		c1, t1 := cpuTime(), time.Now()
		plan, err := engine.Solve(in)
		if err != nil {
			b.Fatal(err)
		}
		c2, t2 := cpuTime(), time.Now()
		var out bytes.Buffer
		if err := simulate.Render(&out, simulate.FromPlan(plan), simulate.FormatJSON); err != nil {
			b.Fatal(err)
		}
		c3, t3 := cpuTime(), time.Now()
		read += t1.Sub(t0)
		solve += t2.Sub(t1)
		render += t3.Sub(t2)
		cpuAll += c3 - c0
		cpuSolve += c2 - c1
		b.ReportMetric(float64(out.Len())/1e6, "json-MB")
	}
	n := float64(b.N)
	b.ReportMetric(read.Seconds()/n, "read+expand-s")
	b.ReportMetric(solve.Seconds()/n, "solve-s")
	b.ReportMetric(render.Seconds()/n, "render-s")
	b.ReportMetric((read+solve+render).Seconds()/solve.Seconds(), "ratio")
	b.ReportMetric(cpuAll.Seconds()/cpuSolve.Seconds(), "cpu-ratio")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkManyNodePools measures `dovetail simulate` (read, expand,
// snapshot, solve) on DefaultMaxNodePools NodePools of one EC2NodeClass
// and a few pods: plain copies, one pool per team (a label, a taint
// its team's pods tolerate, and a limit of its own), and pools that each
// have instance-type requirements of their own (a least memory and a
// zone set per pool, so no two compile alike), those with 10 NodeOverlays
// over instance-type labels, and those with a NodeOverlay for each pool
// (as many as overlay.MaxAdjustedTypes allows are applied). Run with
//
//	go test ./pkg/simulate -run '^$' -bench ManyNodePools -benchtime 1x -benchmem
func BenchmarkManyNodePools(b *testing.B) {
	n := simulate.DefaultMaxNodePools
	for _, shape := range []string{"copies", "teams", "distinct", "overlays", "overlay-per-pool"} {
		b.Run(fmt.Sprintf("%s=%d", shape, n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString(nodeClassDoc)
			for i := range n {
				doc := strings.Replace(poolDoc, "name: general", fmt.Sprintf("name: pool-%d", i), 1)
				if shape == "teams" {
					doc = strings.Replace(doc, "    spec:\n", fmt.Sprintf("    metadata: {labels: {team: t%d}}\n    spec:\n      taints: [{key: team, value: t%d, effect: NoSchedule}]\n", i, i), 1)
					doc += fmt.Sprintf("  limits: {cpu: %d}\n", 100+i)
				}
				if shape != "copies" && shape != "teams" {
					doc += fmt.Sprintf("      - {key: karpenter.k8s.aws/instance-memory, operator: Gt, values: [\"%d\"]}\n", 1000+i)
					if i%2 == 1 {
						doc += fmt.Sprintf("      - {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1%c]}\n", 'a'+rune(i%5))
					}
				}
				if shape == "overlay-per-pool" {
					doc += fmt.Sprintf("---\napiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o%d}\nspec:\n  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [pool-%d]}]\n  priceAdjustment: \"-%d%%\"\n", i, i, 1+i%50)
				}
				sb.WriteString("---\n" + doc)
			}
			if shape == "overlays" {
				for i := range 10 {
					fmt.Fprintf(&sb, "---\napiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o%d}\nspec:\n  weight: %d\n  requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [\"%d\"]}]\n  priceAdjustment: \"-%d%%\"\n", i, i+1, i*6, 1+i*5)
				}
			}
			for i := range 3 {
				fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  tolerations: [{key: team, value: t%d, effect: NoSchedule}]\n  containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 128Mi}}}]\n", i, i*7)
			}
			data := []byte(sb.String())
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				m := &simulate.Manifests{}
				if err := m.Read("in.yaml", data); err != nil {
					b.Fatal(err)
				}
				res, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.NodeClaims) == 0 || len(res.Unschedulable) != 0 {
					b.Fatalf("%d claims, %d unschedulable", len(res.NodeClaims), len(res.Unschedulable))
				}
			}
		})
	}
}
