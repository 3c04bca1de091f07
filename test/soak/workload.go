package main

import (
	"bytes"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// app is one Deployment of the soak's workload: its replicas at the peak
// (up) and after the scale-down (down), what each pod requests and the
// constraints that steer it to a NodePool of examples/.
type app struct {
	name      string
	up, down  int32
	cpu, mem  string
	configure func(*corev1.PodSpec)
}

// apps is the workload: 500 pods at the peak, 136 after the scale-down,
// mixing the constraints the examples' pools are for (zone spread, amd64
// only, arm64 with one pod per host, the tainted team-b pool).
var apps = []app{
	{name: "web", up: 200, down: 60, cpu: "250m", mem: "512Mi", configure: func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
	}},
	{name: "api", up: 150, down: 40, cpu: "500m", mem: "1Gi", configure: func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
	}},
	{name: "cache", up: 20, down: 6, cpu: "1", mem: "4Gi", configure: func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}},
			}},
		}}
	}},
	{name: "reports", up: 130, down: 30, cpu: "500m", mem: "1Gi", configure: func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"team": "b"}
		s.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoSchedule}}
	}},
}

// defaultPDBMaxUnavailable is every app's PodDisruptionBudget unless
// -pdb-max-unavailable says otherwise.
const defaultPDBMaxUnavailable = "25%"

// parseMaxUnavailable reads a PDB maxUnavailable: a count or a percentage.
func parseMaxUnavailable(v string) (intstr.IntOrString, error) {
	mu := intstr.Parse(v)
	if mu.Type == intstr.String {
		var pct int
		if _, err := fmt.Sscanf(v, "%d%%", &pct); err != nil || fmt.Sprintf("%d%%", pct) != v || pct < 0 || pct > 100 {
			return mu, fmt.Errorf("%q: want a count (\"2\") or a percentage from 0%% to 100%% (\"25%%\")", v)
		}
	} else if mu.IntVal < 0 {
		return mu, fmt.Errorf("%q: must be 0 or more", v)
	}
	return mu, nil
}

func totalReplicas(down bool) int32 {
	var n int32
	for _, a := range apps {
		if down {
			n += a.down
		} else {
			n += a.up
		}
	}
	return n
}

// deployment is a's Deployment of pause pods with the given replicas.
func (a app) deployment(ns string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": a.name}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: a.name, Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(a.cpu), corev1.ResourceMemory: resource.MustParse(a.mem),
					}},
				}}},
			},
		},
	}
	if a.configure != nil {
		a.configure(&d.Spec.Template.Spec)
	}
	return d
}

// pdb is a's PodDisruptionBudget (named after the app).
func (a app) pdb(ns string, maxUnavailable intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(maxUnavailable),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": a.name}},
		},
	}
}

// workloadYAML renders the Deployments at the peak or after the
// scale-down, for simulate.
func workloadYAML(ns string, down bool) ([]byte, error) {
	var buf bytes.Buffer
	for _, a := range apps {
		n := a.up
		if down {
			n = a.down
		}
		b, err := yaml.Marshal(a.deployment(ns, n))
		if err != nil {
			return nil, fmt.Errorf("rendering Deployment %s: %w", a.name, err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
