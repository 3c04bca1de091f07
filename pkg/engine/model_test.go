package engine_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// displaced returns the pods of en that would need a new home (not
// daemonset pods), unbound.
func displaced(en engine.ExistingNode) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range en.Pods {
		if len(p.OwnerReferences) > 0 && p.OwnerReferences[0].Kind == "DaemonSet" {
			continue
		}
		q := p.DeepCopy()
		q.Spec.NodeName = ""
		out = append(out, q)
	}
	return out
}

// TestModelWhatIfMatchesSolve: a what-if on a compiled model plans exactly
// what Solve plans on the input rewritten by hand (the removed nodes left
// out, their pods pending), over seeded clusters of every mixed shape.
func TestModelWhatIfMatchesSolve(t *testing.T) {
	scenarios := workload.MixedScenarios()
	for i, sc := range scenarios {
		if sc.Pods > 200 {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			in := sc.Input()
			plan, err := engine.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			cl := workload.Materialize(in, plan, metav1.Unix(1e9, 0))
			// A few pods left pending, so the what-if also carries the
			// input's own pending pods.
			extra := workload.Mixed{Name: "late", Seed: uint64(100 + i), Pods: 5, MaxReplicas: 3}.Input().Pods
			cl.Pods = append(cl.Pods, extra...)
			m, err := engine.Compile(cl)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for trial := range 6 {
				k := 1 + rng.IntN(max(1, len(cl.Nodes)/3))
				perm := rng.Perm(len(cl.Nodes))[:k]
				w := engine.WhatIf{Options: engine.Options{SkipLowerBound: true}}
				ref := *cl
				ref.Options = w.Options
				ref.Nodes = nil
				gone := map[int]bool{}
				for _, j := range perm {
					gone[j] = true
				}
				for j, en := range cl.Nodes {
					if gone[j] {
						w.Remove = append(w.Remove, en.Node.Name)
						w.Pods = append(w.Pods, displaced(en)...)
						continue
					}
					ref.Nodes = append(ref.Nodes, en)
				}
				ref.Pods = append(append([]*corev1.Pod(nil), cl.Pods...), w.Pods...)
				got, err := m.Solve(w)
				if err != nil {
					t.Fatal(err)
				}
				if got.FleetPricePerHour <= got.PricePerHour && len(ref.Nodes) > 0 {
					t.Fatalf("fleet $%.4f/h does not count the %d remaining nodes", got.FleetPricePerHour, len(ref.Nodes))
				}
				want, err := engine.Solve(&ref)
				if err != nil {
					t.Fatal(err)
				}
				// The what-if also keeps clear of the removed nodes' names
				// (they exist until the command completes): compare the
				// claims without their names.
				unname(got)
				unname(want)
				if !reflect.DeepEqual(got, want) {
					for i := range got.NodeClaims {
						if i < len(want.NodeClaims) && !reflect.DeepEqual(got.NodeClaims[i], want.NodeClaims[i]) {
							t.Logf("claim %d:\n got %+v\nwant %+v", i, got.NodeClaims[i], want.NodeClaims[i])
							break
						}
					}
					t.Logf("existing equal %v unsched equal %v", reflect.DeepEqual(got.Existing, want.Existing), reflect.DeepEqual(got.Unschedulable, want.Unschedulable))
					t.Fatalf("trial %d (remove %d of %d nodes): what-if plan differs from Solve:\n got %s\nwant %s",
						trial, k, len(cl.Nodes), summary(got), summary(want))
				}
			}
		})
	}
}

func unname(p *engine.Plan) {
	for i := range p.NodeClaims {
		p.NodeClaims[i].Name = ""
		delete(p.NodeClaims[i].Labels, corev1.LabelHostname)
	}
}

func summary(p *engine.Plan) string {
	return fmt.Sprintf("existing=%d new=%d unsched=%d $%.4f stats=%+v", len(p.Existing), len(p.NodeClaims), len(p.Unschedulable), p.PricePerHour, p.Stats)
}

// TestModelRejectsUnknownNode: removing a node the model does not know is
// an input error naming it.
func TestModelRejectsUnknownNode(t *testing.T) {
	in := workload.MixedScenarios()[0].Input()
	m, err := engine.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Solve(engine.WhatIf{Remove: []string{"no-such-node"}})
	if err == nil || !contains(err.Error(), "no-such-node") {
		t.Fatalf("err = %v, want one naming no-such-node", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// TestModelCommitMatchesCompile: a model committed with a what-if plans
// what a model compiled from the committed input plans, for a further
// what-if, over seeded clusters.
func TestModelCommitMatchesCompile(t *testing.T) {
	commits := 0
	defer func() {
		if commits < 10 {
			t.Errorf("only %d commits checked", commits)
		}
	}()
	for i, sc := range workload.MixedScenarios() {
		if sc.Pods > 200 {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			in := sc.Input()
			plan, err := engine.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			cl := workload.Materialize(in, plan, metav1.Unix(1e9, 0))
			m, err := engine.Compile(cl)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			for step := range 4 {
				nodes := m.Input().Nodes
				if len(nodes) < 2 {
					return
				}
				pick := func() engine.WhatIf {
					w := engine.WhatIf{Options: engine.Options{SkipLowerBound: true}}
					for _, j := range rng.Perm(len(nodes))[:1+rng.IntN(max(1, len(nodes)/4))] {
						w.Remove = append(w.Remove, nodes[j].Node.Name)
						w.Pods = append(w.Pods, displaced(nodes[j])...)
					}
					return w
				}
				w := pick()
				p, err := m.Solve(w)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Unschedulable) > 0 {
					continue
				}
				next, err := m.Commit(w, p)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				fresh, err := engine.Compile(next.Input())
				if err != nil {
					t.Fatal(err)
				}
				w2 := pick()
				// pick() drew from the old node list: keep what still exists.
				w2 = engine.WhatIf{Options: w2.Options}
				for _, en := range next.Input().Nodes[:len(next.Input().Nodes)/3] {
					w2.Remove = append(w2.Remove, en.Node.Name)
					w2.Pods = append(w2.Pods, displaced(en)...)
				}
				got, err := next.Solve(w2)
				if err != nil {
					t.Fatal(err)
				}
				want, err := fresh.Solve(w2)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: committed model plans differently from a compiled one:\n got %s\nwant %s", step, summary(got), summary(want))
				}
				m = next
				commits++
			}
		})
	}
}
