package clusterdump_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dovetail-sh/dovetail/pkg/clusterdump"
)

// TestSanitizePodKeepsSchedulingOnly: requests, sidecar restart policy,
// claims and ephemeral volumes stay; images, env, secrets and service
// accounts go; the input is not modified.
func TestSanitizePodKeepsSchedulingOnly(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{
			"karpenter.sh/do-not-disrupt": "true", "kubectl.kubernetes.io/last-applied-configuration": "{\"env\":\"X\"}"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "robot",
			InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &always,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			Containers: []corev1.Container{{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "K", Value: "V"}},
				Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3")}}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
			},
		},
	}
	before := in.DeepCopy()
	out := clusterdump.SanitizePod(in)
	if !equality.Semantic.DeepEqual(in, before) {
		t.Fatal("SanitizePod modified its input")
	}
	if len(out.Annotations) != 1 || out.Annotations["karpenter.sh/do-not-disrupt"] != "true" {
		t.Errorf("annotations = %v; want only do-not-disrupt", out.Annotations)
	}
	if out.Spec.ServiceAccountName != "" || out.Spec.Containers[0].Image != "" || out.Spec.Containers[0].Env != nil || out.Spec.Containers[0].Ports != nil {
		t.Errorf("kept what scheduling does not need: %+v", out.Spec)
	}
	ic := out.Spec.InitContainers[0]
	if ic.RestartPolicy == nil || *ic.RestartPolicy != always || ic.Resources.Requests.Cpu().MilliValue() != 100 {
		t.Errorf("sidecar = %+v; want its restart policy and requests", ic)
	}
	if len(out.Spec.Volumes) != 2 || out.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-0" ||
		*out.Spec.Volumes[1].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName != "gp3" || out.Spec.Volumes[1].Ephemeral.VolumeClaimTemplate.Annotations != nil {
		t.Errorf("volumes = %+v; want the claim and the ephemeral template spec", out.Spec.Volumes)
	}
}

// TestPDBStatusOnlyWhenComputed: a PDB whose status the disruption
// controller never wrote is written without status; a computed one keeps
// disruptionsAllowed, also when it is 0.
func TestPDBStatusOnlyWhenComputed(t *testing.T) {
	spec := policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	fresh := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "ns"}, Spec: spec}
	computed := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "computed", Namespace: "ns"}, Spec: spec,
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3}}
	d := &clusterdump.Dump{PodDisruptionBudgets: []*policyv1.PodDisruptionBudget{clusterdump.SanitizePDB(fresh), clusterdump.SanitizePDB(computed)}}
	var buf bytes.Buffer
	if err := d.WriteYAML(&buf, nil); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(buf.String(), "---\n")[1:]
	if len(docs) != 2 {
		t.Fatalf("%d documents:\n%s", len(docs), buf.String())
	}
	if strings.Contains(docs[0], "status:") {
		t.Errorf("the never-computed PDB has a status:\n%s", docs[0])
	}
	if !strings.Contains(docs[1], "disruptionsAllowed: 0") || !strings.Contains(docs[1], "expectedPods: 3") {
		t.Errorf("the computed PDB lost its status:\n%s", docs[1])
	}
	if strings.Contains(buf.String(), "null") {
		t.Errorf("null fields written:\n%s", buf.String())
	}
}
