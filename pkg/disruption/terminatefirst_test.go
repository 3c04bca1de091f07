package disruption_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

// limitPool gives the fleet's pool limits.nodes = limit, its usage the
// nodes it has (as the snapshot counts them).
func limitPool(in *disruption.Input, limit string) {
	np := &in.Cluster.NodePools[0]
	np.Limits = corev1.ResourceList{"nodes": resource.MustParse(limit)}
	np.Usage = corev1.ResourceList{"nodes": *resource.NewQuantity(int64(len(in.Cluster.Nodes)), resource.DecimalSI)}
}

// A drifted node whose pods need a new node, in a pool at limits.nodes:
// replacing it first would take the pool past its limit. Gate off it is
// kept, naming the limit; gate on it is deleted first (no replacement,
// TerminateFirst), within the Drifted budget; with room under the limit
// it is replaced first whatever the gate.
func TestTerminateFirstDrift(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  string
		gate   bool
		budget string
		want   string // "kept", "terminate", "replace", "budget"
		static bool
	}{
		{"at limit, gate off", "1", false, "100%", "kept", false},
		{"at limit, gate on", "1", true, "100%", "terminate", false},
		{"static pool at limit, gate on", "1", true, "100%", "terminate", true},
		{"at limit, gate on, budget 0", "1", true, "0", "budget", false},
		{"room under the limit, gate on", "2", true, "100%", "replace", false},
		{"room under the limit, gate off", "2", false, "100%", "replace", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(types(family("m5")), "on-demand")
			a := f.node("m5.2xlarge", "on-demand", "500m", "500m")
			in := f.input(budget(tc.budget))
			limitPool(in, tc.limit)
			in.Options.TerminateFirstDrift = tc.gate
			if tc.static {
				for name, pol := range in.Pools {
					pol.Static, pol.Replicas = true, ptr.To(int64(1))
					in.Pools[name] = pol
				}
			}
			st := in.Nodes[a]
			st.Drifted = "AMIDrift"
			in.Nodes[a] = st
			plan := compute(t, in)
			switch tc.want {
			case "kept":
				if len(plan.Commands) != 0 {
					t.Fatalf("commands %+v, want none", plan.Commands)
				}
				k := kept(t, plan, a)
				if k.Code != disruption.CodeDriftBlocked || !strings.Contains(k.Reason, "limits") || !strings.Contains(k.Reason, "TerminateFirstDrift") {
					t.Fatalf("kept %s: %s; want %s naming the limit and the gate", k.Code, k.Reason, disruption.CodeDriftBlocked)
				}
			case "budget":
				if len(plan.Commands) != 0 || keptCode(t, plan, a) != disruption.CodeBudget {
					t.Fatalf("commands %+v, kept %s; want none, %s", plan.Commands, keptCode(t, plan, a), disruption.CodeBudget)
				}
			case "terminate", "replace":
				if len(plan.Commands) != 1 {
					t.Fatalf("commands %+v, want one", plan.Commands)
				}
				c := plan.Commands[0]
				if c.Reason != disruption.ReasonDrifted || len(c.Nodes) != 1 || c.Nodes[0] != a || len(c.Pods) != 2 {
					t.Fatalf("command %+v, want drift of %s evicting its 2 pods", c, a)
				}
				if tf := tc.want == "terminate"; c.TerminateFirst != tf || (len(c.Replacements) == 0) != tf {
					t.Fatalf("TerminateFirst %v with %d replacements (%s), want terminate-first %v", c.TerminateFirst, len(c.Replacements), c.Message, tf)
				}
				wantWhy := ""
				if tc.want == "terminate" {
					wantWhy = disruption.TerminateFirstPoolAtLimit
					if tc.static {
						wantWhy = disruption.TerminateFirstStaticAtLimit
					}
				}
				if c.TerminateFirstReason != wantWhy {
					t.Fatalf("TerminateFirstReason %q, want %q", c.TerminateFirstReason, wantWhy)
				}
			}
		})
	}
}

// Repair of a node in a pool at limits.nodes: the same, under
// TerminateFirstRepair; the drain bound of the repair policy stays.
func TestTerminateFirstRepair(t *testing.T) {
	for _, gate := range []bool{false, true} {
		in, names := repairFleet(1)
		limitPool(in, "1")
		in.Options.TerminateFirstRepair = gate
		in.Options.TerminateFirstDrift = !gate // the other gate does not count
		sicken(in, names[0], corev1.ConditionFalse, now.Add(-45*time.Minute))
		plan := compute(t, in)
		if !gate {
			if len(plan.Commands) != 0 {
				t.Fatalf("gate off: commands %+v, want none", plan.Commands)
			}
			if k := kept(t, plan, names[0]); k.Code != disruption.CodeRepairBlocked || !strings.Contains(k.Reason, "TerminateFirstRepair") {
				t.Fatalf("gate off: kept %s: %s; want %s naming TerminateFirstRepair", k.Code, k.Reason, disruption.CodeRepairBlocked)
			}
			continue
		}
		if len(plan.Commands) != 1 {
			t.Fatalf("gate on: commands %+v, want one", plan.Commands)
		}
		c := plan.Commands[0]
		if c.Reason != disruption.ReasonUnhealthy || !c.TerminateFirst || len(c.Replacements) != 0 || c.TerminationGracePeriod == nil {
			t.Fatalf("gate on: command %+v, want a terminate-first Unhealthy command with the policy's drain bound", c)
		}
	}
}

func kept(t *testing.T, plan *disruption.Plan, node string) disruption.Kept {
	t.Helper()
	for _, k := range plan.Kept {
		if k.Node == node {
			return k
		}
	}
	t.Fatalf("node %s not kept", node)
	return disruption.Kept{}
}
