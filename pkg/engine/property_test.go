package engine_test

import (
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// genInput draws a random scheduling problem over the test catalog: a few
// NodePools (weights, requirements, taints, limits, minValues), existing
// nodes with pods, daemonsets, unavailable offerings and deployments with
// random requests and constraints.
func genInput(t *rapid.T) *engine.Input {
	in := &engine.Input{Volumes: map[string][]string{}}
	families := []string{"c", "m", "r", "cg", "mg"}
	npools := rapid.IntRange(1, 3).Draw(t, "pools")
	for i := 0; i < npools; i++ {
		var rs []*requirements.Requirement
		if rapid.Bool().Draw(t, fmt.Sprintf("pool%d-fam", i)) {
			k := rapid.IntRange(1, len(families)).Draw(t, fmt.Sprintf("pool%d-nfam", i))
			fams := families[:k]
			if rapid.Bool().Draw(t, fmt.Sprintf("pool%d-minvalues", i)) && k >= 2 {
				rs = append(rs, reqMin(labelFamily, requirements.In, rapid.IntRange(1, k).Draw(t, fmt.Sprintf("pool%d-mv", i)), fams...))
			} else {
				rs = append(rs, req(labelFamily, requirements.In, fams...))
			}
		}
		switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("pool%d-ct", i)) {
		case 1:
			rs = append(rs, req(labelCT, requirements.In, "spot"))
		case 2:
			rs = append(rs, req(labelCT, requirements.In, "spot", "on-demand"))
		}
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("pool%d-zone", i)) == 0 {
			rs = append(rs, req(corev1.LabelTopologyZone, requirements.In, "zone-a", "zone-b"))
		}
		p := pool(fmt.Sprintf("pool%d", i), int32(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("pool%d-w", i))*10), rs...)
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("pool%d-taint", i)) == 0 {
			p.Taints = []corev1.Taint{{Key: "team", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
			p.Labels = map[string]string{"team": "x"}
		}
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("pool%d-limit", i)) == 0 {
			p.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(rapid.IntRange(2, 40).Draw(t, fmt.Sprintf("pool%d-cpu", i))), resource.DecimalSI)}
			if rapid.Bool().Draw(t, fmt.Sprintf("pool%d-nodes", i)) {
				p.Limits["nodes"] = *resource.NewQuantity(int64(rapid.IntRange(1, 6).Draw(t, fmt.Sprintf("pool%d-n", i))), resource.DecimalSI)
			}
		}
		in.NodePools = append(in.NodePools, p)
	}
	if rapid.IntRange(0, 3).Draw(t, "unavailable") == 0 {
		for _, it := range testTypes() {
			for _, o := range it.Offerings {
				if o.CapacityType == cloudprovider.CapacityTypeSpot && o.Zone == "zone-a" {
					in.Unavailable = append(in.Unavailable, engine.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
				}
			}
		}
	}
	for i := 0; i < rapid.IntRange(0, 2).Draw(t, "daemonsets"); i++ {
		var nsel map[string]string
		if rapid.Bool().Draw(t, fmt.Sprintf("ds%d-arch", i)) {
			nsel = map[string]string{corev1.LabelArchStable: "arm64"}
		}
		in.DaemonSets = append(in.DaemonSets, daemonSet(fmt.Sprintf("ds%d", i), rapid.SampledFrom([]string{"50m", "200m", "500m"}).Draw(t, fmt.Sprintf("ds%d-cpu", i)), "128Mi", nsel))
	}
	labelsPool := []string{"a", "b", "c"}
	for i := 0; i < rapid.IntRange(0, 3).Draw(t, "nodes"); i++ {
		name := fmt.Sprintf("node%d", i)
		zone := rapid.SampledFrom(testZones).Draw(t, name+"-zone")
		node := existingNode(name, zone, rapid.SampledFrom([]string{"2", "4", "8"}).Draw(t, name+"-cpu"), "16Gi", map[string]string{corev1.LabelArchStable: "amd64"})
		en := engine.ExistingNode{Node: node, MarkedForDeletion: rapid.IntRange(0, 5).Draw(t, name+"-del") == 0}
		for j := 0; j < rapid.IntRange(0, 3).Draw(t, name+"-pods"); j++ {
			opts := []podOpt{withLabels("app", rapid.SampledFrom(labelsPool).Draw(t, fmt.Sprintf("%s-p%d-app", name, j)))}
			if rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("%s-p%d-anti", name, j)) == 0 {
				opts = append(opts, withAnti(corev1.LabelTopologyZone, sel("app", rapid.SampledFrom(labelsPool).Draw(t, fmt.Sprintf("%s-p%d-antisel", name, j)))))
			}
			en.Pods = append(en.Pods, newPod(fmt.Sprintf("%s-pod%d", name, j), "500m", "1Gi", opts...))
		}
		in.Nodes = append(in.Nodes, en)
	}
	ndeps := rapid.IntRange(1, 6).Draw(t, "deployments")
	for d := 0; d < ndeps; d++ {
		pre := fmt.Sprintf("d%d", d)
		app := rapid.SampledFrom(labelsPool).Draw(t, pre+"-app")
		n := rapid.IntRange(1, 8).Draw(t, pre+"-replicas")
		cpu := rapid.SampledFrom([]string{"100m", "250m", "500m", "1", "2", "3500m"}).Draw(t, pre+"-cpu")
		mem := rapid.SampledFrom([]string{"128Mi", "512Mi", "1Gi", "3Gi", "8Gi"}).Draw(t, pre+"-mem")
		opts := []podOpt{withLabels("app", app)}
		if rapid.IntRange(0, 4).Draw(t, pre+"-zs") == 0 {
			opts = append(opts, withSpread(corev1.LabelTopologyZone, int32(rapid.IntRange(1, 2).Draw(t, pre+"-skew")), corev1.DoNotSchedule, sel("app", app)))
		}
		if rapid.IntRange(0, 5).Draw(t, pre+"-hs") == 0 {
			opts = append(opts, withSpread(corev1.LabelHostname, 1, corev1.DoNotSchedule, sel("app", app)))
		}
		if rapid.IntRange(0, 4).Draw(t, pre+"-ha") == 0 {
			opts = append(opts, withAnti(corev1.LabelHostname, sel("app", rapid.SampledFrom(labelsPool).Draw(t, pre+"-hasel"))))
		}
		if rapid.IntRange(0, 6).Draw(t, pre+"-za") == 0 {
			opts = append(opts, withAnti(corev1.LabelTopologyZone, sel("app", rapid.SampledFrom(labelsPool).Draw(t, pre+"-zasel"))))
		}
		if rapid.IntRange(0, 5).Draw(t, pre+"-aff") == 0 {
			opts = append(opts, withAffinity(rapid.SampledFrom([]string{corev1.LabelHostname, corev1.LabelTopologyZone}).Draw(t, pre+"-affkey"), sel("app", rapid.SampledFrom(labelsPool).Draw(t, pre+"-affsel"))))
		}
		if rapid.IntRange(0, 4).Draw(t, pre+"-ns") == 0 {
			k := rapid.SampledFrom([]string{corev1.LabelTopologyZone, corev1.LabelArchStable, labelFamily}).Draw(t, pre+"-nskey")
			v := map[string][]string{corev1.LabelTopologyZone: testZones, corev1.LabelArchStable: {"amd64", "arm64"}, labelFamily: families}[k]
			opts = append(opts, withNodeSelector(k, rapid.SampledFrom(v).Draw(t, pre+"-nsval")))
		}
		if rapid.IntRange(0, 4).Draw(t, pre+"-tol") == 0 {
			opts = append(opts, withToleration("team", "x"))
		}
		if rapid.IntRange(0, 5).Draw(t, pre+"-port") == 0 {
			opts = append(opts, withHostPort(9100))
		}
		if rapid.IntRange(0, 5).Draw(t, pre+"-pref") == 0 {
			opts = append(opts, withPreferredAnti(int32(rapid.IntRange(1, 100).Draw(t, pre+"-prefw")), corev1.LabelHostname, sel("app", app)))
		}
		if rapid.IntRange(0, 5).Draw(t, pre+"-init") == 0 {
			opts = append(opts, withInit(cpu, "64Mi", rapid.Bool().Draw(t, pre+"-sidecar")))
		}
		vol := rapid.IntRange(0, 5).Draw(t, pre+"-vol") == 0
		for r := 0; r < n; r++ {
			name := fmt.Sprintf("%s-%d", pre, r)
			po := opts
			if vol {
				claim := "data-" + name
				po = append(po[:len(po):len(po)], withVolume(claim))
				in.Volumes["default/"+claim] = []string{rapid.SampledFrom(testZones).Draw(t, name+"-volzone")}
			}
			in.Pods = append(in.Pods, newPod(name, cpu, mem, po...))
		}
	}
	if rapid.IntRange(0, 3).Draw(t, "ignore") == 0 {
		in.Options.PreferencePolicy = engine.PreferenceIgnore
	}
	return in
}

// TestPlanProperties checks, over random inputs, with the independent
// checker: no node over allocatable (daemonsets and max pods included),
// every hard constraint holds on the planned node set, pool limits hold,
// the same input gives the same plan, and the price is at least the lower
// bound.
func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatalf("Solve: %v", err)
		}
		if errs := checkPlan(in, plan); len(errs) > 0 {
			for _, c := range plan.NodeClaims {
				t.Logf("claim %s pool %s offering %+v options %v pods %v reqs %v", c.Name, c.NodePool, c.Offering, c.InstanceTypeOptions, c.Pods, c.Requirements)
			}
			t.Fatalf("invalid plan:\n%s", describeErrs(errs))
		}
		again, err := engine.Solve(in)
		if err != nil || !reflect.DeepEqual(plan, again) {
			t.Fatalf("second solve differs (err %v)", err)
		}
	})
}

var _ = appsv1.DaemonSet{}
