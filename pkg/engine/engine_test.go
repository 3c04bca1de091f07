package engine_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
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

// solveChecked solves in twice, requires identical plans and a plan the
// independent checker accepts.
func solveChecked(t *testing.T, in *engine.Input) *engine.Plan {
	t.Helper()
	plan, err := engine.Solve(in)
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	again, err := engine.Solve(in)
	if err != nil {
		t.Fatalf("Solve (again): %v", err)
	}
	if !reflect.DeepEqual(plan, again) {
		t.Fatalf("same input, different plans")
	}
	if errs := checkPlan(in, plan); len(errs) > 0 {
		t.Fatalf("invalid plan:\n%s", describeErrs(errs))
	}
	return plan
}

func wantUnschedulable(t *testing.T, plan *engine.Plan, pod string, code engine.ReasonCode, msgParts ...string) {
	t.Helper()
	u := unschedulableOf(plan, pod)
	if u == nil {
		t.Fatalf("pod %s placed, want unschedulable %s", pod, code)
	}
	if u.Code != code {
		t.Fatalf("pod %s: code %s, want %s (%s)", pod, u.Code, code, u.Message)
	}
	for _, part := range msgParts {
		if !strings.Contains(u.Message, part) {
			t.Errorf("pod %s: message %q does not mention %q", pod, u.Message, part)
		}
	}
}

func onDemand(o cloudprovider.Offering) bool {
	return o.CapacityType == cloudprovider.CapacityTypeOnDemand
}

func TestResources(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		// want is the request the engine must size for (derived by hand
		// from the container rules, not by the engine).
		want corev1.ResourceList
	}{
		{name: "plain container", pod: newPod("p", "1500m", "3Gi"), want: rl("1500m", "3Gi")},
		{name: "init container larger than app", pod: newPod("p", "500m", "1Gi", withInit("3", "1Gi", false)), want: rl("3", "1Gi")},
		{name: "init container smaller than app", pod: newPod("p", "2", "5Gi", withInit("1", "1Gi", false)), want: rl("2", "5Gi")},
		{name: "sidecar adds to app", pod: newPod("p", "1", "1Gi", withInit("1", "1Gi", true)), want: rl("2", "2Gi")},
		{name: "init after sidecar counts the sidecar", pod: newPod("p", "500m", "512Mi", withInit("1", "1Gi", true), withInit("2", "1Gi", false)), want: rl("3", "2Gi")},
		{name: "pod overhead", pod: func() *corev1.Pod {
			p := newPod("p", "1", "1Gi")
			p.Spec.Overhead = rl("500m", "512Mi")
			return p
		}(), want: rl("1500m", "1536Mi")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{Pods: []*corev1.Pod{tc.pod}, NodePools: []engine.NodePool{pool("default", 10)}}
			plan := solveChecked(t, in)
			c := claimOf(plan, "p")
			if c == nil {
				t.Fatalf("not placed: %+v", plan.Unschedulable)
			}
			name, price := cheapestFit(testTypes(), tc.want, nil, nil, onDemand)
			if c.Offering.InstanceType != name || c.Offering.Price != price {
				t.Errorf("offering %s $%v, want %s $%v", c.Offering.InstanceType, c.Offering.Price, name, price)
			}
			for k, q := range tc.want {
				if got := c.Requests[k]; got.Cmp(q) != 0 {
					t.Errorf("requests %s = %s, want %s", k, got.String(), q.String())
				}
			}
		})
	}
}

func TestDaemonSetOverhead(t *testing.T) {
	tests := []struct {
		name string
		ds   []string // which daemonsets: all, amd64, arm64, tainted
		pool engine.NodePool
		// dsReq is the overhead the chosen node must also hold.
		dsReq corev1.ResourceList
	}{
		{name: "everywhere", ds: []string{"all"}, pool: pool("default", 10), dsReq: rl("1", "2Gi")},
		// The template sets only limits: its pods request them (the API
		// server defaults requests from limits on pods, not on templates).
		{name: "limits only", ds: []string{"limits-only"}, pool: pool("default", 10), dsReq: rl("2", "6Gi")},
		{name: "only arm64 nodes; pool is arm64", ds: []string{"arm64"}, pool: pool("default", 10, req(corev1.LabelArchStable, requirements.In, "arm64")), dsReq: rl("1", "2Gi")},
		{name: "only arm64 nodes; pool is amd64", ds: []string{"arm64"}, pool: pool("default", 10, req(corev1.LabelArchStable, requirements.In, "amd64")), dsReq: rl("0", "0")},
		{name: "does not tolerate the pool taint", ds: []string{"all"}, pool: func() engine.NodePool {
			p := pool("default", 10)
			p.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
			return p
		}(), dsReq: rl("0", "0")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{NodePools: []engine.NodePool{tc.pool}}
			for _, d := range tc.ds {
				switch d {
				case "all":
					in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "2Gi", nil))
				case "arm64":
					in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "2Gi", map[string]string{corev1.LabelArchStable: "arm64"}))
				case "limits-only":
					ds := daemonSet("agent", "2", "6Gi", nil)
					c := &ds.Spec.Template.Spec.Containers[0]
					c.Resources.Limits, c.Resources.Requests = c.Resources.Requests, nil
					in.DaemonSets = append(in.DaemonSets, ds)
				}
			}
			p := newPod("p", "2500m", "2Gi", withToleration("dedicated", "x"))
			in.Pods = []*corev1.Pod{p}
			plan := solveChecked(t, in)
			c := claimOf(plan, "p")
			if c == nil {
				t.Fatalf("not placed: %+v", plan.Unschedulable)
			}
			keep := func(it *cloudprovider.InstanceType) bool {
				for r := range tc.pool.Requirements.All() {
					if v, ok := it.Labels[r.Key()]; ok && !r.Has(v) {
						return false
					}
				}
				return true
			}
			name, price := cheapestFit(testTypes(), rl("2500m", "2Gi"), tc.dsReq, keep, onDemand)
			if c.Offering.InstanceType != name || c.Offering.Price != price {
				t.Errorf("offering %s $%v, want %s $%v", c.Offering.InstanceType, c.Offering.Price, name, price)
			}
		})
	}
}

func TestNodeSelectionConstraints(t *testing.T) {
	tests := []struct {
		name  string
		pools []engine.NodePool
		pod   *corev1.Pod
		check func(t *testing.T, plan *engine.Plan)
	}{
		{
			name:  "nodeSelector zone pins the claim's zone",
			pools: []engine.NodePool{pool("default", 10)},
			pod:   newPod("p", "1", "1Gi", withNodeSelector(corev1.LabelTopologyZone, "zone-b")),
			check: func(t *testing.T, plan *engine.Plan) {
				c := claimOf(plan, "p")
				if c == nil || zoneOf(c) != "zone-b" {
					t.Fatalf("claim %+v, want zone-b", c)
				}
				if r := c.Requirements.Get(corev1.LabelTopologyZone); r == nil || !r.Has("zone-b") || r.Len() != 1 {
					t.Errorf("zone requirement %v, want In [zone-b]", r)
				}
			},
		},
		{
			name:  "required affinity OR: second term when the first is impossible",
			pools: []engine.NodePool{pool("default", 10)},
			pod: newPod("p", "1", "1Gi", withRequiredTerms(
				term(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-x"),
				term(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"),
			)),
			check: func(t *testing.T, plan *engine.Plan) {
				c := claimOf(plan, "p")
				if c == nil || c.Labels[corev1.LabelArchStable] != "arm64" && !strings.HasPrefix(c.Offering.InstanceType, "cg") && !strings.HasPrefix(c.Offering.InstanceType, "mg") {
					t.Fatalf("claim %+v, want an arm64 type", c)
				}
			},
		},
		{
			name:  "label no pool provides names the key",
			pools: []engine.NodePool{pool("default", 10)},
			pod:   newPod("p", "1", "1Gi", withNodeSelector("example.com/gpu-model", "h100")),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "p", engine.NoCompatibleNodePool, "example.com/gpu-model", `"default"`)
			},
		},
		{
			name: "template label is provided",
			pools: []engine.NodePool{func() engine.NodePool {
				p := pool("team", 10)
				p.Labels = map[string]string{"team": "a"}
				return p
			}()},
			pod: newPod("p", "1", "1Gi", withNodeSelector("team", "a")),
			check: func(t *testing.T, plan *engine.Plan) {
				if c := claimOf(plan, "p"); c == nil || c.Labels["team"] != "a" {
					t.Fatalf("claim %+v, want label team=a", c)
				}
			},
		},
		{
			name: "untolerated taint falls back to the next pool",
			pools: []engine.NodePool{func() engine.NodePool {
				p := pool("gpu", 50)
				p.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
				return p
			}(), pool("default", 10)},
			pod: newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				if c := claimOf(plan, "p"); c == nil || c.NodePool != "default" {
					t.Fatalf("claim %+v, want pool default", c)
				}
			},
		},
		{
			name: "untolerated taint everywhere names the taint",
			pools: []engine.NodePool{func() engine.NodePool {
				p := pool("gpu", 50)
				p.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
				return p
			}()},
			pod: newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "p", engine.NoCompatibleNodePool, "nvidia.com/gpu=true:NoSchedule")
			},
		},
		{
			name: "tolerated taint is used and carried",
			pools: []engine.NodePool{func() engine.NodePool {
				p := pool("team", 10)
				p.Taints = []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
				return p
			}()},
			pod: newPod("p", "1", "1Gi", withToleration("team", "a")),
			check: func(t *testing.T, plan *engine.Plan) {
				c := claimOf(plan, "p")
				if c == nil || len(c.Taints) != 1 || c.Taints[0].Key != "team" {
					t.Fatalf("claim %+v, want the team taint", c)
				}
			},
		},
		{
			name: "startup taints do not block",
			pools: []engine.NodePool{func() engine.NodePool {
				p := pool("default", 10)
				p.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
				return p
			}()},
			pod: newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				if c := claimOf(plan, "p"); c == nil || len(c.StartupTaints) != 1 {
					t.Fatalf("claim %+v, want the startup taint carried", c)
				}
			},
		},
		{
			name:  "too big for every type names the largest allocatable",
			pools: []engine.NodePool{pool("default", 10)},
			pod:   newPod("p", "40", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "p", engine.ResourcesExceedAllTypes, "r.16x", "cpu=15900m", "short on cpu")
			},
		},
		{
			name:  "pool requirements restrict types",
			pools: []engine.NodePool{pool("default", 10, req(labelFamily, requirements.In, "r"))},
			pod:   newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				if c := claimOf(plan, "p"); c == nil || !strings.HasPrefix(c.Offering.InstanceType, "r.") {
					t.Fatalf("claim %+v, want an r type", c)
				}
			},
		},
		{
			name: "unsupported pool gives Unsupported",
			pools: []engine.NodePool{func() engine.NodePool {
				p := pool("windows", 10)
				p.UnsupportedReason = "Windows AMI families are not supported yet"
				return p
			}()},
			pod: newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "p", engine.Unsupported, "Windows AMI families are not supported yet")
			},
		},
		{
			name:  "reserved-only pool without a reservation has no offering",
			pools: []engine.NodePool{pool("reserved", 10, req(labelCT, requirements.In, "reserved"))},
			pod:   newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "p", engine.NoAvailableOffering, "available offering")
			},
		},
		{
			name:  "capacity type left open means on-demand",
			pools: []engine.NodePool{pool("default", 10)},
			pod:   newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				c := claimOf(plan, "p")
				if c == nil || c.Offering.CapacityType != cloudprovider.CapacityTypeOnDemand {
					t.Fatalf("claim %+v, want on-demand", c)
				}
				if r := c.Requirements.Get(labelCT); r == nil || r.Has("spot") {
					t.Errorf("capacity-type requirement %v, want on-demand only", r)
				}
			},
		},
		{
			name:  "pool allowing spot gets the cheaper spot",
			pools: []engine.NodePool{pool("default", 10, req(labelCT, requirements.In, "spot", "on-demand"))},
			pod:   newPod("p", "1", "1Gi"),
			check: func(t *testing.T, plan *engine.Plan) {
				c := claimOf(plan, "p")
				name, price := cheapestFit(testTypes(), rl("1", "1Gi"), nil, nil, nil)
				if c == nil || c.Offering.CapacityType != cloudprovider.CapacityTypeSpot || c.Offering.InstanceType != name || c.Offering.Price != price {
					t.Fatalf("claim %+v, want spot %s at %v", c, name, price)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{Pods: []*corev1.Pod{tc.pod}, NodePools: tc.pools}
			tc.check(t, solveChecked(t, in))
		})
	}
}

func TestPodTopology(t *testing.T) {
	app := sel("app", "web")
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		existing []engine.ExistingNode
		check    func(t *testing.T, plan *engine.Plan)
	}{
		{
			name: "hostname anti-affinity: one node each",
			pods: replicas(4, "web", "100m", "128Mi", withLabels("app", "web"), withAnti(corev1.LabelHostname, app)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 4 {
					t.Fatalf("%d claims, want 4", len(plan.NodeClaims))
				}
			},
		},
		{
			name: "zone anti-affinity beyond the zones is unschedulable",
			pods: replicas(4, "web", "100m", "128Mi", withLabels("app", "web"), withAnti(corev1.LabelTopologyZone, app)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Unschedulable) != 1 {
					t.Fatalf("%d unschedulable, want 1 (three zones)", len(plan.Unschedulable))
				}
				wantUnschedulable(t, plan, plan.Unschedulable[0].Pod.Name, engine.AntiAffinityConflict, "app=web")
			},
		},
		{
			name: "hostname affinity: together",
			pods: replicas(3, "web", "500m", "512Mi", withLabels("app", "web"), withAffinity(corev1.LabelHostname, app)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 1 || len(plan.NodeClaims[0].Pods) != 3 {
					t.Fatalf("claims %+v, want one with all three", plan.NodeClaims)
				}
			},
		},
		{
			name: "zone affinity to an existing pod's zone",
			pods: []*corev1.Pod{newPod("client", "1", "1Gi", withAffinity(corev1.LabelTopologyZone, sel("app", "db")))},
			existing: []engine.ExistingNode{{
				Node: existingNode("old", "zone-c", "1", "1Gi", nil),
				Pods: []*corev1.Pod{newPod("db", "500m", "512Mi", withLabels("app", "db"))},
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				if c := claimOf(plan, "client"); c == nil || zoneOf(c) != "zone-c" {
					t.Fatalf("claim %+v, want zone-c", c)
				}
			},
		},
		{
			name: "existing pod's anti-affinity keeps incoming pods off its zone",
			pods: replicas(2, "web", "100m", "128Mi", withLabels("app", "web")),
			existing: []engine.ExistingNode{{
				Node: existingNode("old", "zone-a", "4", "8Gi", nil),
				Pods: []*corev1.Pod{newPod("loner", "100m", "128Mi", withAnti(corev1.LabelTopologyZone, app))},
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				for _, name := range []string{"web-0", "web-1"} {
					if placementOf(plan, name) != "" {
						t.Errorf("%s placed on the existing node", name)
					}
					if c := claimOf(plan, name); c == nil || zoneOf(c) == "zone-a" {
						t.Errorf("%s: claim %+v, want a zone other than zone-a", name, c)
					}
				}
			},
		},
		{
			name: "zone spread maxSkew 1 over three zones",
			pods: replicas(6, "web", "1", "1Gi", withLabels("app", "web"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app)),
			check: func(t *testing.T, plan *engine.Plan) {
				per := map[string]int{}
				for _, c := range plan.NodeClaims {
					per[zoneOf(&c)] += len(c.Pods)
				}
				for _, z := range testZones {
					if per[z] != 2 {
						t.Errorf("zone %s has %d pods, want 2 (%v)", z, per[z], per)
					}
				}
			},
		},
		{
			name: "zone spread counts existing pods",
			pods: replicas(4, "web", "1", "1Gi", withLabels("app", "web"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app)),
			existing: []engine.ExistingNode{{
				Node: existingNode("old", "zone-a", "100m", "128Mi", nil),
				Pods: []*corev1.Pod{newPod("web-old", "100m", "128Mi", withLabels("app", "web"))},
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				per := map[string]int{"zone-a": 1}
				for _, c := range plan.NodeClaims {
					per[zoneOf(&c)] += len(c.Pods)
				}
				for _, z := range testZones {
					if n := per[z]; n < 1 || n > 2 {
						t.Errorf("zone %s ends with %d pods (%v), want balanced", z, n, per)
					}
				}
			},
		},
		{
			name: "hostname spread maxSkew 1 puts one per node",
			pods: replicas(3, "web", "100m", "128Mi", withLabels("app", "web"), withSpread(corev1.LabelHostname, 1, corev1.DoNotSchedule, app)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 3 {
					t.Fatalf("%d claims, want 3", len(plan.NodeClaims))
				}
			},
		},
		{
			name: "ScheduleAnyway spread is a preference",
			pods: replicas(3, "web", "100m", "128Mi", withLabels("app", "web"), withSpread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, app)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Unschedulable) != 0 || len(plan.NodeClaims) != 3 {
					t.Fatalf("%d claims, %d unschedulable; want 3 claims (honoured while possible)", len(plan.NodeClaims), len(plan.Unschedulable))
				}
			},
		},
		{
			name: "host ports conflict: one per node",
			pods: replicas(2, "agent", "100m", "128Mi", withHostPort(8080)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 2 {
					t.Fatalf("%d claims, want 2", len(plan.NodeClaims))
				}
			},
		},
		{
			name: "host port taken on the existing node",
			pods: replicas(1, "agent", "100m", "128Mi", withHostPort(8080)),
			existing: []engine.ExistingNode{{
				Node: existingNode("old", "zone-a", "4", "8Gi", nil),
				Pods: []*corev1.Pod{newPod("other", "100m", "128Mi", withHostPort(8080))},
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				if placementOf(plan, "agent-0") != "" || claimOf(plan, "agent-0") == nil {
					t.Fatalf("agent-0 should get a new node")
				}
			},
		},
		{
			name: "free room on an existing node is used first",
			pods: replicas(2, "web", "1", "1Gi"),
			existing: []engine.ExistingNode{{
				Node: existingNode("old", "zone-a", "4", "8Gi", nil),
				Pods: []*corev1.Pod{newPod("other", "1", "1Gi")},
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 0 || len(plan.Existing) != 2 {
					t.Fatalf("%d claims, %d placements; want both on the existing node", len(plan.NodeClaims), len(plan.Existing))
				}
			},
		},
		{
			name: "nodes marked for deletion are not targets",
			pods: replicas(1, "web", "1", "1Gi"),
			existing: []engine.ExistingNode{{
				Node: existingNode("old", "zone-a", "4", "8Gi", nil), MarkedForDeletion: true,
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Existing) != 0 || len(plan.NodeClaims) != 1 {
					t.Fatalf("placements %+v, want a new claim", plan.Existing)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{Pods: tc.pods, Nodes: tc.existing, NodePools: []engine.NodePool{pool("default", 10)}}
			tc.check(t, solveChecked(t, in))
		})
	}
}

func TestVolumeZones(t *testing.T) {
	tests := []struct {
		name    string
		volumes map[string][]string
		pool    engine.NodePool
		check   func(t *testing.T, plan *engine.Plan)
	}{
		{
			name:    "claim lands in the volume's zone",
			volumes: map[string][]string{"default/data": {"zone-c"}},
			pool:    pool("default", 10),
			check: func(t *testing.T, plan *engine.Plan) {
				if c := claimOf(plan, "db"); c == nil || zoneOf(c) != "zone-c" {
					t.Fatalf("claim %+v, want zone-c", c)
				}
			},
		},
		{
			name:    "volume zone the pool does not offer",
			volumes: map[string][]string{"default/data": {"zone-c"}},
			pool:    pool("default", 10, req(corev1.LabelTopologyZone, requirements.In, "zone-a", "zone-b")),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "db", engine.VolumeZoneConflict, "data", "zone-c")
			},
		},
		{
			name:    "absent volume: any zone",
			volumes: map[string][]string{"default/other": {"zone-c"}},
			pool:    pool("default", 10),
			check: func(t *testing.T, plan *engine.Plan) {
				if claimOf(plan, "db") == nil {
					t.Fatalf("not placed: %+v", plan.Unschedulable)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{Pods: []*corev1.Pod{newPod("db", "1", "1Gi", withVolume("data"))}, Volumes: tc.volumes, NodePools: []engine.NodePool{tc.pool}}
			tc.check(t, solveChecked(t, in))
		})
	}
}

func TestWeightsAndLimits(t *testing.T) {
	spot := pool("spot", 20, req(labelCT, requirements.In, "spot"))
	od := pool("on-demand", 10, req(labelCT, requirements.In, "on-demand"))
	noSpot := func() []engine.OfferingKey {
		var keys []engine.OfferingKey
		for _, it := range testTypes() {
			for _, o := range it.Offerings {
				if o.CapacityType == cloudprovider.CapacityTypeSpot {
					keys = append(keys, engine.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
				}
			}
		}
		return keys
	}
	limited := func(name string, weight int32, cpu string) engine.NodePool {
		p := pool(name, weight)
		p.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		return p
	}
	tests := []struct {
		name  string
		in    *engine.Input
		check func(t *testing.T, plan *engine.Plan)
	}{
		{
			name: "higher weight pool wins even when pricier",
			in: &engine.Input{Pods: replicas(2, "web", "1", "1Gi"), NodePools: []engine.NodePool{
				pool("expensive", 50, req(labelFamily, requirements.In, "r")), pool("cheap", 10, req(labelFamily, requirements.In, "cg")),
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				for _, c := range plan.NodeClaims {
					if c.NodePool != "expensive" {
						t.Errorf("claim in %s, want expensive", c.NodePool)
					}
				}
			},
		},
		{
			name: "spot pool first",
			in:   &engine.Input{Pods: replicas(2, "web", "1", "1Gi"), NodePools: []engine.NodePool{od, spot}},
			check: func(t *testing.T, plan *engine.Plan) {
				for _, c := range plan.NodeClaims {
					if c.NodePool != "spot" || c.Offering.CapacityType != "spot" {
						t.Errorf("claim %s %s, want spot", c.NodePool, c.Offering.CapacityType)
					}
				}
			},
		},
		{
			name: "spot unavailable: on-demand pool takes over",
			in:   &engine.Input{Pods: replicas(2, "web", "1", "1Gi"), NodePools: []engine.NodePool{od, spot}, Unavailable: noSpot()},
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) == 0 {
					t.Fatalf("nothing planned: %+v", plan.Unschedulable)
				}
				for _, c := range plan.NodeClaims {
					if c.NodePool != "on-demand" {
						t.Errorf("claim in %s, want on-demand", c.NodePool)
					}
				}
			},
		},
		{
			name: "limit reached: the next pool",
			in: &engine.Input{Pods: replicas(3, "big", "3", "1Gi", withAnti(corev1.LabelHostname, sel("app", "big")), withLabels("app", "big")),
				NodePools: []engine.NodePool{limited("small", 20, "8"), pool("fallback", 10)}},
			check: func(t *testing.T, plan *engine.Plan) {
				per := map[string]int{}
				for _, c := range plan.NodeClaims {
					per[c.NodePool]++
				}
				// Each pod needs a 4-vCPU node (3 cpu + 100m reserved): two
				// fit in 8 vCPU of limit.
				if per["small"] != 2 || per["fallback"] != 1 {
					t.Fatalf("claims per pool %v, want small=2 fallback=1", per)
				}
			},
		},
		{
			name: "limit reached everywhere",
			in: &engine.Input{Pods: replicas(2, "big", "3", "1Gi", withAnti(corev1.LabelHostname, sel("app", "big")), withLabels("app", "big")),
				NodePools: []engine.NodePool{limited("small", 20, "4")}},
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Unschedulable) != 1 {
					t.Fatalf("%d unschedulable, want 1", len(plan.Unschedulable))
				}
				wantUnschedulable(t, plan, plan.Unschedulable[0].Pod.Name, engine.NodePoolLimitReached, "cpu limit 4")
			},
		},
		{
			name: "usage counts against the limit",
			in: func() *engine.Input {
				p := limited("small", 20, "8")
				p.Usage = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}
				return &engine.Input{Pods: replicas(1, "big", "3", "1Gi"), NodePools: []engine.NodePool{p}}
			}(),
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "big-0", engine.NodePoolLimitReached)
			},
		},
		{
			name: "nodes limit",
			in: func() *engine.Input {
				p := pool("small", 20)
				p.Limits = corev1.ResourceList{"nodes": resource.MustParse("1")}
				return &engine.Input{Pods: replicas(2, "big", "1", "1Gi", withAnti(corev1.LabelHostname, sel("app", "big")), withLabels("app", "big")), NodePools: []engine.NodePool{p}}
			}(),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 1 || len(plan.Unschedulable) != 1 {
					t.Fatalf("%d claims, %d unschedulable; want 1 and 1", len(plan.NodeClaims), len(plan.Unschedulable))
				}
			},
		},
		{
			name: "minValues keeps enough families among the options",
			in: &engine.Input{Pods: replicas(1, "web", "1", "1Gi"), NodePools: []engine.NodePool{
				pool("flexible", 10, reqMin(labelFamily, requirements.In, 3, "c", "m", "r", "cg", "mg")),
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				c := claimOf(plan, "web-0")
				if c == nil {
					t.Fatalf("not placed: %+v", plan.Unschedulable)
				}
				fams := map[string]bool{}
				for _, o := range c.InstanceTypeOptions {
					fams[strings.SplitN(o, ".", 2)[0]] = true
				}
				if len(fams) < 3 {
					t.Errorf("options %v span %d families, want >= 3", c.InstanceTypeOptions, len(fams))
				}
			},
		},
		{
			name: "minValues that no node holding the pod keeps",
			in: &engine.Input{Pods: replicas(1, "web", "12", "100Gi"), NodePools: []engine.NodePool{
				pool("flexible", 10, reqMin(labelFamily, requirements.In, 3, "c", "m", "r", "cg", "mg")),
			}},
			check: func(t *testing.T, plan *engine.Plan) {
				wantUnschedulable(t, plan, "web-0", engine.MinValuesUnsatisfiable, "minValues 3")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, solveChecked(t, tc.in))
		})
	}
}

func TestPreferences(t *testing.T) {
	web := sel("app", "web")
	tests := []struct {
		name   string
		policy engine.PreferencePolicy
		pods   []*corev1.Pod
		check  func(t *testing.T, plan *engine.Plan)
	}{
		{
			name:   "preferred zone honoured",
			policy: engine.PreferenceRespect,
			pods:   replicas(2, "web", "1", "1Gi", withPreferredNode(10, corev1.LabelTopologyZone, "zone-b")),
			check: func(t *testing.T, plan *engine.Plan) {
				for _, c := range plan.NodeClaims {
					if zoneOf(&c) != "zone-b" {
						t.Errorf("claim in %s, want zone-b", zoneOf(&c))
					}
				}
			},
		},
		{
			name:   "impossible preference relaxed",
			policy: engine.PreferenceRespect,
			pods:   replicas(2, "web", "1", "1Gi", withPreferredNode(10, corev1.LabelTopologyZone, "zone-z")),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Unschedulable) != 0 || plan.Stats.Relaxed != 2 {
					t.Fatalf("%d unschedulable, %d relaxed; want 0 and 2", len(plan.Unschedulable), plan.Stats.Relaxed)
				}
			},
		},
		{
			name:   "preferred anti-affinity spreads while zones remain, then relaxes",
			policy: engine.PreferenceRespect,
			pods:   replicas(5, "web", "100m", "128Mi", withLabels("app", "web"), withPreferredAnti(10, corev1.LabelTopologyZone, web)),
			check: func(t *testing.T, plan *engine.Plan) {
				zones := map[string]bool{}
				for _, c := range plan.NodeClaims {
					zones[zoneOf(&c)] = true
				}
				if len(plan.Unschedulable) != 0 || len(zones) != 3 || plan.Stats.Relaxed != 2 {
					t.Fatalf("zones %v, %d relaxed, %d unschedulable; want 3 zones, 2 relaxed", zones, plan.Stats.Relaxed, len(plan.Unschedulable))
				}
			},
		},
		{
			name:   "Ignore drops preferences",
			policy: engine.PreferenceIgnore,
			pods:   replicas(3, "web", "100m", "128Mi", withLabels("app", "web"), withPreferredAnti(10, corev1.LabelHostname, web)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 1 {
					t.Fatalf("%d claims, want 1 (preference ignored)", len(plan.NodeClaims))
				}
			},
		},
		{
			name:   "Respect keeps hostname anti-affinity preference",
			policy: engine.PreferenceRespect,
			pods:   replicas(3, "web", "100m", "128Mi", withLabels("app", "web"), withPreferredAnti(10, corev1.LabelHostname, web)),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.NodeClaims) != 3 {
					t.Fatalf("%d claims, want 3 (preference honoured)", len(plan.NodeClaims))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{Pods: tc.pods, NodePools: []engine.NodePool{pool("default", 10)}, Options: engine.Options{PreferencePolicy: tc.policy}}
			tc.check(t, solveChecked(t, in))
		})
	}
}

func TestInFlight(t *testing.T) {
	inflight := engine.InFlightNodeClaim{
		Name: "default-abcde", NodePool: "default",
		Requirements: requirements.NewRequirements(
			req(corev1.LabelTopologyZone, requirements.In, "zone-b"),
			req(corev1.LabelInstanceTypeStable, requirements.In, "m.4x"),
		),
		InstanceTypeOptions: []string{"m.4x"},
		Allocatable:         rl("3900m", "15Gi"),
		Pods:                []*corev1.Pod{newPod("nominated", "1", "1Gi")},
	}
	in := &engine.Input{
		Pods:      []*corev1.Pod{newPod("a", "2", "2Gi"), newPod("b", "2", "2Gi")},
		InFlight:  []engine.InFlightNodeClaim{inflight},
		NodePools: []engine.NodePool{pool("default", 10)},
	}
	plan := solveChecked(t, in)
	// 3900m - 1 nominated leaves room for exactly one 2-cpu pod.
	onClaim := 0
	for _, p := range plan.Existing {
		if p.Node == "default-abcde" && p.InFlight {
			onClaim++
		}
	}
	if onClaim != 1 || len(plan.NodeClaims) != 1 {
		t.Fatalf("%d on the in-flight claim, %d new claims; want 1 and 1", onClaim, len(plan.NodeClaims))
	}
	if plan.NodeClaims[0].Name == "default-abcde" {
		t.Errorf("new claim reuses the in-flight name")
	}
}

func TestMalformedInput(t *testing.T) {
	tests := []struct {
		name string
		in   *engine.Input
		want string // a field path the error must name
	}{
		{name: "nil input", in: nil, want: "input"},
		{name: "nil pod", in: &engine.Input{Pods: []*corev1.Pod{nil}}, want: "pods[0]"},
		{name: "pod without name", in: &engine.Input{Pods: []*corev1.Pod{newPod("", "1", "1Gi")}}, want: "pods[0].metadata.name"},
		{name: "duplicate pod", in: &engine.Input{Pods: []*corev1.Pod{newPod("a", "1", "1Gi"), newPod("a", "1", "1Gi")}}, want: "pods[1]"},
		{name: "duplicate pool", in: &engine.Input{NodePools: []engine.NodePool{pool("p", 1), pool("p", 1)}}, want: "nodePools[1].name"},
		{name: "bad policy", in: &engine.Input{Options: engine.Options{PreferencePolicy: "Sometimes"}}, want: "options.preferencePolicy"},
		{name: "bad spread", in: &engine.Input{Pods: []*corev1.Pod{newPod("a", "1", "1Gi", withSpread(corev1.LabelTopologyZone, 0, corev1.DoNotSchedule, sel("a", "b")))}}, want: "topologySpreadConstraints[0].maxSkew"},
		{name: "bad node affinity", in: &engine.Input{Pods: []*corev1.Pod{newPod("a", "1", "1Gi", withRequiredTerms(term("k", "Sometimes", "v")))}}, want: "pods[0]"},
		{name: "nil node", in: &engine.Input{Nodes: []engine.ExistingNode{{}}}, want: "nodes[0].node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := engine.Solve(tc.in)
			if !errors.Is(err, engine.ErrInvalidInput) {
				t.Fatalf("err %v, want ErrInvalidInput", err)
			}
			var ie *engine.InputError
			if !errors.As(err, &ie) || len(ie.Errs) == 0 {
				t.Fatalf("err %v carries no field errors", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

func TestInputNotModified(t *testing.T) {
	in := workloadSmall()
	before := deepCopyInput(in)
	solveChecked(t, in)
	if !reflect.DeepEqual(in, before) {
		t.Fatal("Solve modified its input")
	}
}

func workloadSmall() *engine.Input {
	web := sel("app", "web")
	pods := replicas(6, "web", "500m", "1Gi", withLabels("app", "web"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web))
	pods = append(pods, replicas(3, "db", "2", "8Gi", withLabels("app", "db"), withAnti(corev1.LabelHostname, sel("app", "db")))...)
	return &engine.Input{Pods: pods, NodePools: []engine.NodePool{pool("default", 10, req(labelCT, requirements.In, "spot", "on-demand"))},
		DaemonSets: []*appsv1.DaemonSet{daemonSet("agent", "100m", "128Mi", nil)}}
}

func deepCopyInput(in *engine.Input) *engine.Input {
	out := *in
	out.Pods = nil
	for _, p := range in.Pods {
		out.Pods = append(out.Pods, p.DeepCopy())
	}
	out.DaemonSets = nil
	for _, d := range in.DaemonSets {
		out.DaemonSets = append(out.DaemonSets, d.DeepCopy())
	}
	out.NodePools = nil
	for _, np := range in.NodePools {
		c := np
		c.InstanceTypes = nil
		for _, it := range np.InstanceTypes {
			cp := *it
			cp.Labels = maps.Clone(it.Labels)
			cp.Capacity = it.Capacity.DeepCopy()
			cp.Offerings = slices.Clone(it.Offerings)
			c.InstanceTypes = append(c.InstanceTypes, &cp)
		}
		out.NodePools = append(out.NodePools, c)
	}
	return &out
}

func TestSpreadOptions(t *testing.T) {
	web := sel("app", "web")
	both := pool("default", 10, req(labelCT, requirements.In, "spot", "on-demand"))
	tests := []struct {
		name  string
		pods  []*corev1.Pod
		check func(t *testing.T, plan *engine.Plan)
	}{
		{
			name: "capacity-type spread splits spot and on-demand",
			pods: replicas(4, "web", "1", "1Gi", withLabels("app", "web"), withSpread(labelCT, 1, corev1.DoNotSchedule, web)),
			check: func(t *testing.T, plan *engine.Plan) {
				per := map[string]int{}
				for _, c := range plan.NodeClaims {
					per[c.Offering.CapacityType] += len(c.Pods)
					if r := c.Requirements.Get(labelCT); r == nil || r.Len() != 1 {
						t.Errorf("claim %s: capacity type not pinned: %v", c.Name, r)
					}
				}
				if per["spot"] != 2 || per["on-demand"] != 2 {
					t.Fatalf("pods per capacity type %v, want 2 and 2", per)
				}
			},
		},
		{
			name: "minDomains above the zones caps each zone at maxSkew",
			pods: replicas(5, "web", "1", "1Gi", withLabels("app", "web"), func(p *corev1.Pod) {
				min := int32(5)
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web, MinDomains: &min,
				}}
			}),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Unschedulable) != 2 {
					t.Fatalf("%d unschedulable, want 2 (three zones, one pod each)", len(plan.Unschedulable))
				}
				wantUnschedulable(t, plan, plan.Unschedulable[0].Pod.Name, engine.TopologySpreadUnsatisfiable, "minDomains 5")
			},
		},
		{
			name: "matchLabelKeys spreads each revision on its own",
			pods: append(
				replicas(3, "old", "1", "1Gi", withLabels("app", "web", "rev", "1"), func(p *corev1.Pod) {
					p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web, MatchLabelKeys: []string{"rev"},
					}}
				}),
				replicas(3, "new", "1", "1Gi", withLabels("app", "web", "rev", "2"), func(p *corev1.Pod) {
					p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web, MatchLabelKeys: []string{"rev"},
					}}
				})...),
			check: func(t *testing.T, plan *engine.Plan) {
				for _, prefix := range []string{"old", "new"} {
					zones := map[string]bool{}
					for i := range 3 {
						if c := claimOf(plan, fmt.Sprintf("%s-%d", prefix, i)); c != nil {
							zones[zoneOf(c)] = true
						}
					}
					if len(zones) != 3 {
						t.Errorf("%s pods in zones %v, want all three", prefix, zones)
					}
				}
			},
		},
		{
			name: "nodeAffinityPolicy Honor counts only matching nodes",
			pods: append(
				replicas(3, "arm", "1", "1Gi", withLabels("app", "web"), withNodeSelector(corev1.LabelArchStable, "arm64"), withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)),
				replicas(3, "amd", "1", "1Gi", withLabels("app", "web"), withNodeSelector(corev1.LabelArchStable, "amd64"), withNodeSelector(corev1.LabelTopologyZone, "zone-a"))...),
			check: func(t *testing.T, plan *engine.Plan) {
				if len(plan.Unschedulable) != 0 {
					t.Fatalf("unschedulable: %+v", plan.Unschedulable)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &engine.Input{Pods: tc.pods, NodePools: []engine.NodePool{both}}
			tc.check(t, solveChecked(t, in))
		})
	}
}
