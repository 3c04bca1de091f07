package engine_test

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// A static pool's node: every type the pool allows is an option, cheapest
// first; the pool's taints, limits and UnsupportedReason do not stop it;
// the daemonset overhead is its requests.
func TestStaticNodeClaim(t *testing.T) {
	p := pool("static", 0, req(labelFamily, requirements.In, "c"))
	p.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	p.Limits = rl("1", "1Gi")
	p.UnsupportedReason = "static NodePool"
	agent := daemonSet("agent", "100m", "64Mi", nil)
	agent.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	in := &engine.Input{NodePools: []engine.NodePool{pool("other", 10), p},
		DaemonSets: []*appsv1.DaemonSet{agent, daemonSet("intolerant", "1", "1Gi", nil)}}
	nc, err := engine.StaticNodeClaim(in, "static")
	if err != nil {
		t.Fatal(err)
	}
	if nc.NodePool != "static" || len(nc.Pods) != 0 {
		t.Fatalf("pool %q, pods %v", nc.NodePool, nc.Pods)
	}
	var want []string
	for _, it := range testTypes() {
		if it.Labels[labelFamily] == "c" {
			want = append(want, it.Name)
		}
	}
	got := slices.Clone(nc.InstanceTypeOptions)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("options %v, want every c type %v", nc.InstanceTypeOptions, want)
	}
	if nc.Offering.InstanceType != "c.1x" {
		t.Errorf("offering %+v, want the cheapest type c.1x", nc.Offering)
	}
	if q := nc.Requests[corev1.ResourceCPU]; q.MilliValue() != 100 {
		t.Errorf("requests %v, want the tolerating daemonset's 100m cpu", nc.Requests)
	}
	if q := nc.Requests[corev1.ResourcePods]; q.Value() != 1 {
		t.Errorf("requests %v, want the daemonset's one pod slot", nc.Requests)
	}
	if len(nc.Taints) != 1 || nc.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v, want the pool's", nc.Taints)
	}

	if _, err := engine.StaticNodeClaim(in, "missing"); !errors.Is(err, engine.ErrInvalidInput) {
		t.Errorf("missing pool: err %v, want ErrInvalidInput", err)
	}
	none := pool("none", 0, req(labelFamily, requirements.In, "nosuchfamily"))
	if _, err := engine.StaticNodeClaim(&engine.Input{NodePools: []engine.NodePool{none}}, "none"); err == nil {
		t.Error("a pool that allows no type planned a node")
	}
}
