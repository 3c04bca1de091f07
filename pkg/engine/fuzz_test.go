package engine_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// FuzzSolvePodSpec feeds arbitrary node selector expressions, label
// selectors, topology keys, skews and quantities through Solve: it must
// never panic, must reject malformed input only with ErrInvalidInput, and
// must otherwise account for every pod exactly once.
func FuzzSolvePodSpec(f *testing.F) {
	f.Add("kubernetes.io/arch", "In", "arm64", "500m", "topology.kubernetes.io/zone", int32(1), "app", "In", "web")
	f.Add("topology.kubernetes.io/zone", "NotIn", "zone-a", "2", "kubernetes.io/hostname", int32(2), "app", "Exists", "")
	f.Add("example.com/family", "Gt", "3", "100m", "karpenter.sh/capacity-type", int32(0), "tier", "NotIn", "db")
	f.Add("", "Bogus", "", "-1", "", int32(-3), "", "In", "")
	f.Add("karpenter.sh/capacity-type", "In", "reserved", "1e3", "example.com/cpu", int32(1), "app", "DoesNotExist", "")
	f.Fuzz(func(t *testing.T, key, op, value, cpu, topoKey string, skew int32, selKey, selOp, selValue string) {
		q, err := resource.ParseQuantity(cpu)
		if err != nil {
			q = resource.MustParse("100m")
		}
		var values []string
		if value != "" {
			values = []string{value}
		}
		var selValues []string
		if selValue != "" {
			selValues = []string{selValue}
		}
		mk := func(name string) *corev1.Pod {
			p := newPod(name, "100m", "64Mi", withLabels("app", "web"))
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOperator(op), Values: values}},
				}}},
			}}
			ls := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: selKey, Operator: metav1.LabelSelectorOperator(selOp), Values: selValues}}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: skew, TopologyKey: topoKey, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: ls}}
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: ls, TopologyKey: topoKey}}}
			return p
		}
		in := &engine.Input{Pods: []*corev1.Pod{mk("a"), mk("b")}, NodePools: []engine.NodePool{pool("default", 10)}}
		plan, err := engine.Solve(in)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidInput) {
				t.Fatalf("error %v is not ErrInvalidInput", err)
			}
			return
		}
		seen := map[engine.PodRef]int{}
		for _, c := range plan.NodeClaims {
			for _, r := range c.Pods {
				seen[r]++
			}
		}
		for _, u := range plan.Unschedulable {
			seen[u.Pod]++
			if u.Code == "" || u.Message == "" {
				t.Fatalf("unschedulable %s without code or message", u.Pod)
			}
		}
		for _, p := range in.Pods {
			if seen[engine.PodRef{Namespace: p.Namespace, Name: p.Name}] != 1 {
				t.Fatalf("pod %s accounted %d times", p.Name, seen[engine.PodRef{Namespace: p.Namespace, Name: p.Name}])
			}
		}
	})
}
