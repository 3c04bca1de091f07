package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Pools that allow different types, zones and capacity types, and run
// different daemonsets, share the compiled record of a type wherever those
// agree (the hostile-input issue's 5,000 distinct pools). The sharing must
// be invisible: the same input with a private copy of every type per pool
// (nothing can be shared) plans exactly alike, and the plan holds up under
// the independent checker.
func TestSharedTypesAreInvisible(t *testing.T) {
	cpu := func(op requirements.Operator, v string) *requirements.Requirement { return req(labelCPU, op, v) }
	amd := req(corev1.LabelArchStable, requirements.In, "amd64")
	pools := func(types func() []*cloudprovider.InstanceType) []engine.NodePool {
		return []engine.NodePool{
			{Name: "big", InstanceTypes: types(), Labels: map[string]string{"team": "a"}, Weight: 2,
				Limits:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40")},
				Requirements: requirements.NewRequirements(amd, cpu(requirements.Gt, "3"))},
			{Name: "zoned", InstanceTypes: types(), Labels: map[string]string{"team": "b"},
				Requirements: requirements.NewRequirements(amd, req(corev1.LabelTopologyZone, requirements.NotIn, "zone-a"))},
			{Name: "spot", InstanceTypes: types(), Labels: map[string]string{"team": "a"},
				Requirements: requirements.NewRequirements(amd, cpu(requirements.Lt, "9"),
					req("karpenter.sh/capacity-type", requirements.In, "spot", "on-demand"))},
			{Name: "tiny", InstanceTypes: types(), Labels: map[string]string{"team": "c"},
				Requirements: requirements.NewRequirements(cpu(requirements.Lt, "5"))},
			{Name: "same-as-zoned", InstanceTypes: types(), Labels: map[string]string{"team": "d"}, Weight: 1,
				Limits:       corev1.ResourceList{"nodes": resource.MustParse("1")},
				Requirements: requirements.NewRequirements(amd, req(corev1.LabelTopologyZone, requirements.NotIn, "zone-a"), cpu(requirements.Gt, "1"))},
		}
	}
	daemons := []*appsv1.DaemonSet{
		daemonSet("agent", "500m", "512Mi", map[string]string{"team": "a"}),
		daemonSet("heavy", "1500m", "1Gi", map[string]string{"team": "c"}),
	}
	var pods []*corev1.Pod
	pods = append(pods, replicas(20, "a", "2", "3Gi", withNodeSelector("team", "a"))...)
	pods = append(pods, replicas(5, "b", "1", "1Gi", withNodeSelector("team", "b"))...)
	pods = append(pods, replicas(4, "c", "500m", "512Mi", withNodeSelector("team", "c"))...)
	pods = append(pods, replicas(2, "d", "3", "2Gi", withNodeSelector("team", "d"))...)
	pods = append(pods, replicas(2, "any", "3", "4Gi")...)

	shared := testTypes()
	sharedIn := &engine.Input{NodePools: pools(func() []*cloudprovider.InstanceType { return shared }), DaemonSets: daemons, Pods: pods}
	privateIn := &engine.Input{NodePools: pools(func() []*cloudprovider.InstanceType {
		out := testTypes()
		for i, it := range out {
			c := *it
			c.Offerings = slices.Clone(it.Offerings)
			out[i] = &c
		}
		return out
	}), DaemonSets: daemons, Pods: pods}

	summary := func(in *engine.Input) (string, *engine.Plan) {
		t.Helper()
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if errs := checkPlan(in, plan); len(errs) > 0 {
			t.Fatalf("plan fails the checker:\n%s", describeErrs(errs))
		}
		var lines []string
		for _, c := range plan.NodeClaims {
			var names []string
			for _, p := range c.Pods {
				names = append(names, p.Name)
			}
			slices.Sort(names)
			lines = append(lines, fmt.Sprintf("%s %s/%s/%s $%.6f opts=%d requests=%v pods=%v", c.NodePool,
				c.Offering.InstanceType, c.Offering.Zone, c.Offering.CapacityType, c.Offering.Price, len(c.InstanceTypeOptions), c.Requests, names))
		}
		slices.Sort(lines)
		for _, u := range plan.Unschedulable {
			lines = append(lines, "unschedulable "+u.Pod.Name)
		}
		return strings.Join(lines, "\n"), plan
	}
	got, plan := summary(sharedIn)
	want, _ := summary(privateIn)
	if got != want {
		t.Fatalf("shared types plan:\n%s\nprivate types plan:\n%s", got, want)
	}
	// The case is not vacuous: every pool is used, and the daemonsets
	// weigh on the nodes of the pools they select.
	used := map[string]bool{}
	for _, c := range plan.NodeClaims {
		used[c.NodePool] = true
	}
	for _, np := range sharedIn.NodePools {
		if !used[np.Name] {
			t.Errorf("pool %s makes no claim:\n%s", np.Name, got)
		}
	}
	if len(plan.Unschedulable) != 0 {
		t.Errorf("%d pods unschedulable:\n%s", len(plan.Unschedulable), got)
	}
}
