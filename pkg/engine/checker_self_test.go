package engine_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// TestCheckerCatchesViolations corrupts valid plans and requires the
// independent checker to notice, so property tests built on it can fail.
func TestCheckerCatchesViolations(t *testing.T) {
	web := sel("app", "web")
	base := func() *engine.Input {
		pods := replicas(3, "anti", "1", "1Gi", withLabels("app", "anti"), withAnti(corev1.LabelHostname, sel("app", "anti")))
		pods = append(pods, replicas(3, "spread", "500m", "512Mi", withLabels("app", "web"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web))...)
		pods = append(pods, newPod("pinned", "1", "1Gi", withNodeSelector(corev1.LabelTopologyZone, "zone-a")))
		return &engine.Input{Pods: pods, NodePools: []engine.NodePool{pool("default", 10, req(labelCT, requirements.In, "spot", "on-demand"))}}
	}
	tests := []struct {
		name    string
		corrupt func(plan *engine.Plan)
		want    string
	}{
		{
			name: "anti-affinity pods on one node",
			corrupt: func(plan *engine.Plan) {
				a, b := claimOf(plan, "anti-0"), claimOf(plan, "anti-1")
				moveRef(a, b, "anti-0")
			},
			want: "anti-affinity",
		},
		{
			name: "node over allocatable",
			corrupt: func(plan *engine.Plan) {
				c := claimOf(plan, "anti-0")
				c.Offering.InstanceType = "cg.1x"
				c.InstanceTypeOptions = append([]string{"cg.1x"}, c.InstanceTypeOptions...)
			},
			want: "allocatable",
		},
		{
			name: "pinned pod moved out of its zone",
			corrupt: func(plan *engine.Plan) {
				c := claimOf(plan, "pinned")
				c.Offering.Zone = "zone-b"
			},
			want: "zone",
		},
		{
			name: "spread skew broken",
			corrupt: func(plan *engine.Plan) {
				for i := range plan.NodeClaims {
					c := &plan.NodeClaims[i]
					for _, r := range c.Pods {
						if strings.HasPrefix(r.Name, "spread") {
							c.Offering.Zone = "zone-a"
						}
					}
				}
			},
			want: "",
		},
		{
			name: "pod dropped",
			corrupt: func(plan *engine.Plan) {
				c := claimOf(plan, "pinned")
				c.Pods = nil
			},
			want: "accounted 0 times",
		},
		{
			name: "price misreported",
			corrupt: func(plan *engine.Plan) {
				plan.PricePerHour *= 0.5
			},
			want: "PricePerHour",
		},
		{
			name: "not the cheapest offering",
			corrupt: func(plan *engine.Plan) {
				c := claimOf(plan, "pinned")
				c.Offering.CapacityType = "on-demand"
			},
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			plan := solveChecked(t, in)
			tc.corrupt(plan)
			errs := checkPlan(in, plan)
			if len(errs) == 0 {
				t.Fatal("checker accepted a corrupted plan")
			}
			if tc.want != "" && !strings.Contains(describeErrs(errs), tc.want) {
				t.Errorf("violations %q do not mention %q", describeErrs(errs), tc.want)
			}
		})
	}
}

func moveRef(from, to *engine.NewNodeClaim, name string) {
	for i, r := range from.Pods {
		if r.Name == name {
			from.Pods = append(from.Pods[:i], from.Pods[i+1:]...)
			to.Pods = append(to.Pods, r)
			return
		}
	}
}
