package local

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// SystemNodeName is the Node the stack's own control-plane Pods are bound
// to: tainted CriticalAddonsOnly=true:NoSchedule so that no workload
// lands there, and, as every Node of the stack, run by kwok. Whoever
// needs it first creates it (SystemNode); later creations find it.
const SystemNodeName = "dovetail-system"

// SchedulerConfigDir is where a kind cluster built from the peer's
// hack/kind/cluster.yaml mounts its kube-scheduler configuration, and
// SchedulerConfigPath the file kube-scheduler is pointed at there: the
// peer's DefaultTopologySpreadConstraints specs run only against a
// cluster whose kube-scheduler Pod names that path.
const (
	SchedulerConfigDir  = "/etc/kubernetes/karpenter-scheduler-config"
	SchedulerConfigPath = SchedulerConfigDir + "/kube-scheduler-config.yaml"
)

// SystemNode is the Node SystemNodeName, with room for the few Pods the
// stack binds or schedules there (the scheduler's mirror Pod, the
// controller's stand-in Deployment: package standin). It has no
// NodeClaim, so dovetail leaves it alone.
func SystemNode() *corev1.Node {
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: SystemNodeName, Labels: map[string]string{
			corev1.LabelHostname: SystemNodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			"node-role.kubernetes.io/control-plane": "",
		}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{SystemTaint}},
		Status: corev1.NodeStatus{Capacity: room, Allocatable: room},
	}
}

// SystemTaint keeps workloads off SystemNodeName (as a system node
// group's taint does on EKS).
var SystemTaint = corev1.Taint{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// EnsureSystemNode creates SystemNode unless it exists.
func EnsureSystemNode(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Nodes().Create(ctx, SystemNode(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the Node %s: %w", SystemNodeName, err)
	}
	return nil
}

// SchedulerPod is the mirror Pod kube-system/kube-scheduler-<node> a
// kubeadm or kind control plane shows for its kube-scheduler, bound to
// node: labelled component=kube-scheduler, tier=control-plane, its command
// naming SchedulerConfigPath, that directory a hostPath volume. The
// stack's kube-scheduler is a process (package controlplane) run with the
// same configuration; the Pod shows it as a cluster shows its own.
func SchedulerPod(node string) *corev1.Pod {
	dirType := corev1.HostPathDirectory
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "kube-system", Name: "kube-scheduler-" + node,
			Labels: map[string]string{"component": "kube-scheduler", "tier": "control-plane"},
			// The kubelet's mark of a static pod's mirror.
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "dovetail-local"},
		},
		Spec: corev1.PodSpec{
			NodeName:          node,
			PriorityClassName: "system-node-critical",
			HostNetwork:       true,
			Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:         "kube-scheduler",
				Image:        "registry.k8s.io/kube-scheduler:" + controlplane.KubernetesVersion,
				Command:      []string{"kube-scheduler", "--config=" + SchedulerConfigPath},
				VolumeMounts: []corev1.VolumeMount{{Name: "karpenter-scheduler-config", MountPath: SchedulerConfigDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "karpenter-scheduler-config", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: SchedulerConfigDir, Type: &dirType}}}},
		},
	}
}

// ensureSchedulerPod creates the system Node (unless it exists) and the
// scheduler's mirror Pod on it (unless it exists).
func ensureSchedulerPod(ctx context.Context, cs kubernetes.Interface) error {
	if err := EnsureSystemNode(ctx, cs); err != nil {
		return err
	}
	if _, err := cs.CoreV1().Pods("kube-system").Create(ctx, SchedulerPod(SystemNodeName), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the kube-scheduler Pod: %w", err)
	}
	return nil
}
