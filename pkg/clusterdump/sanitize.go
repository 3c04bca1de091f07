package clusterdump

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
)

// AllowedPodAnnotations are the only pod annotations a snapshot keeps: the
// ones autoscalers read when they decide whether a pod may be moved.
var AllowedPodAnnotations = []string{
	karpv1.DoNotDisruptAnnotationKey,
	"cluster-autoscaler.kubernetes.io/safe-to-evict",
	"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes",
}

// allowedNodeAnnotation reports whether a Node or NodeClaim annotation is
// kept: the autoscalers' own (karpenter.sh, karpenter.k8s.aws, dovetail.sh)
// and Cluster Autoscaler's scale-down switch.
func allowedNodeAnnotation(key string) bool {
	for _, d := range []string{karpv1.Group + "/", awsv1.Group + "/", "dovetail.sh/"} {
		if strings.HasPrefix(key, d) {
			return true
		}
	}
	return key == "cluster-autoscaler.kubernetes.io/scale-down-disabled"
}

func filterMap(m map[string]string, keep func(string) bool) map[string]string {
	var out map[string]string
	for k, v := range m {
		if keep(k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// slimMeta keeps identity, labels, owners and the timestamps decisions use;
// never managed fields, resource versions or finalizers' bookkeeping.
func slimMeta(in metav1.ObjectMeta, keepAnnotation func(string) bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name:              in.Name,
		Namespace:         in.Namespace,
		UID:               in.UID,
		Labels:            in.Labels,
		OwnerReferences:   in.OwnerReferences,
		CreationTimestamp: in.CreationTimestamp,
		DeletionTimestamp: in.DeletionTimestamp,
	}
	if keepAnnotation != nil {
		out.Annotations = filterMap(in.Annotations, keepAnnotation)
	}
	return out
}

// SanitizePod returns the part of p that scheduling needs (see the package
// doc); p is not modified, and the result may share maps and slices with p.
func SanitizePod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: slimMeta(p.ObjectMeta, func(k string) bool { return slices.Contains(AllowedPodAnnotations, k) }),
		Spec:       sanitizePodSpec(&p.Spec),
		Status: corev1.PodStatus{
			Phase:             p.Status.Phase,
			Conditions:        podConditions(p.Status.Conditions),
			StartTime:         p.Status.StartTime,
			NominatedNodeName: p.Status.NominatedNodeName,
		},
	}
}

func podConditions(in []corev1.PodCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(in))
	for _, c := range in {
		out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func sanitizePodSpec(s *corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{
		NodeName:                      s.NodeName,
		NodeSelector:                  s.NodeSelector,
		Affinity:                      s.Affinity,
		Tolerations:                   s.Tolerations,
		TopologySpreadConstraints:     s.TopologySpreadConstraints,
		SchedulerName:                 s.SchedulerName,
		Priority:                      s.Priority,
		PriorityClassName:             s.PriorityClassName,
		PreemptionPolicy:              s.PreemptionPolicy,
		Overhead:                      s.Overhead,
		RuntimeClassName:              s.RuntimeClassName,
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		HostNetwork:                   s.HostNetwork,
		SchedulingGates:               s.SchedulingGates,
		Resources:                     s.Resources,
		RestartPolicy:                 s.RestartPolicy,
	}
	for _, c := range s.InitContainers {
		out.InitContainers = append(out.InitContainers, sanitizeContainer(&c))
	}
	for _, c := range s.Containers {
		out.Containers = append(out.Containers, sanitizeContainer(&c))
	}
	for _, v := range s.Volumes {
		if sv, ok := sanitizeVolume(v); ok {
			out.Volumes = append(out.Volumes, sv)
		}
	}
	return out
}

// sanitizeContainer keeps the name, resources, host ports and the restart
// policy (a restartable init container is a sidecar, whose requests add
// up differently).
func sanitizeContainer(c *corev1.Container) corev1.Container {
	out := corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			out.Ports = append(out.Ports, corev1.ContainerPort{ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIP: p.HostIP, Protocol: p.Protocol})
		}
	}
	return out
}

// sanitizeVolume keeps the volumes that constrain where a pod can run:
// claims (their zone and attach limits), generic ephemeral volumes, and
// emptyDirs (node storage). Secrets, config maps, projected and host
// volumes are left out.
func sanitizeVolume(v corev1.Volume) (corev1.Volume, bool) {
	switch {
	case v.PersistentVolumeClaim != nil:
		return corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}}, true
	case v.Ephemeral != nil:
		e := &corev1.EphemeralVolumeSource{}
		if t := v.Ephemeral.VolumeClaimTemplate; t != nil {
			e.VolumeClaimTemplate = &corev1.PersistentVolumeClaimTemplate{Spec: t.Spec}
		}
		return corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: e}}, true
	case v.EmptyDir != nil:
		return corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: v.EmptyDir}}, true
	}
	return corev1.Volume{}, false
}

// SanitizeDaemonSet keeps the selector and a sanitized pod template.
func SanitizeDaemonSet(ds *appsv1.DaemonSet) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: slimMeta(ds.ObjectMeta, nil),
		Spec: appsv1.DaemonSetSpec{
			Selector: ds.Spec.Selector,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      ds.Spec.Template.Labels,
					Annotations: filterMap(ds.Spec.Template.Annotations, func(k string) bool { return slices.Contains(AllowedPodAnnotations, k) }),
				},
				Spec: sanitizePodSpec(&ds.Spec.Template.Spec),
			},
		},
	}
}

// SanitizeNode keeps labels, the autoscalers' annotations, taints, the
// provider ID, capacity, allocatable and conditions.
func SanitizeNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: slimMeta(n.ObjectMeta, allowedNodeAnnotation),
		Spec: corev1.NodeSpec{
			ProviderID:    n.Spec.ProviderID,
			Taints:        n.Spec.Taints,
			Unschedulable: n.Spec.Unschedulable,
		},
		Status: corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, corev1.NodeCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason})
	}
	return out
}

// SanitizeNodeClaim keeps the whole NodeClaim but its bookkeeping metadata.
func SanitizeNodeClaim(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	out := &karpv1.NodeClaim{TypeMeta: metav1.TypeMeta{APIVersion: karpv1.Group + "/v1", Kind: "NodeClaim"},
		ObjectMeta: slimMeta(nc.ObjectMeta, allowedNodeAnnotation), Spec: nc.Spec, Status: nc.Status}
	return out
}

// SanitizeNodePool keeps the whole NodePool but its bookkeeping metadata.
func SanitizeNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	return &karpv1.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: karpv1.Group + "/v1", Kind: "NodePool"},
		ObjectMeta: slimMeta(np.ObjectMeta, allowedNodeAnnotation), Spec: np.Spec, Status: np.Status}
}

// OverlayGateOffReason is the Ready reason the controller gives every
// NodeOverlay while its NodeOverlay feature gate is off
// (nodeoverlay.ReasonGateOff; not imported, the controllers are not a
// dependency of the reader).
const OverlayGateOffReason = "FeatureGateOff"

// SanitizeNodeOverlay keeps the overlay's name and spec (no status: the
// reader applies what the spec says, as the controller does).
func SanitizeNodeOverlay(o *karpv1alpha1.NodeOverlay) *karpv1alpha1.NodeOverlay {
	return &karpv1alpha1.NodeOverlay{TypeMeta: metav1.TypeMeta{APIVersion: karpv1alpha1.GroupVersion.String(), Kind: "NodeOverlay"},
		ObjectMeta: slimMeta(o.ObjectMeta, nil), Spec: o.Spec}
}

// SanitizeNodeClass keeps the EC2NodeClass without spec.userData.
func SanitizeNodeClass(nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	out := &awsv1.EC2NodeClass{TypeMeta: metav1.TypeMeta{APIVersion: awsv1.Group + "/v1", Kind: "EC2NodeClass"},
		ObjectMeta: slimMeta(nc.ObjectMeta, allowedNodeAnnotation), Spec: nc.Spec, Status: nc.Status}
	out.Spec.UserData = nil
	return out
}

// SanitizePDB keeps the selector, the budget and the status counts. A
// status the disruption controller never wrote (observedGeneration 0, e.g.
// on a cluster without kube-controller-manager) is left out, so that a
// reader computes the allowance from the pods instead of reading 0.
func SanitizePDB(p *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	out := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: slimMeta(p.ObjectMeta, nil),
		Spec:       p.Spec,
	}
	if p.Status.ObservedGeneration != 0 {
		out.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: p.Status.ObservedGeneration,
			DisruptionsAllowed: p.Status.DisruptionsAllowed,
			CurrentHealthy:     p.Status.CurrentHealthy,
			DesiredHealthy:     p.Status.DesiredHealthy,
			ExpectedPods:       p.Status.ExpectedPods,
		}
	}
	return out
}

// SanitizePVC keeps the claim's spec and phase.
func SanitizePVC(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: slimMeta(c.ObjectMeta, nil),
		Spec:       c.Spec,
		Status:     corev1.PersistentVolumeClaimStatus{Phase: c.Status.Phase},
	}
}

// SanitizePV keeps what ties a volume to a place: its node affinity, claim,
// class, capacity and access modes; not its source (attributes may hold
// credentials' names).
func SanitizePV(v *corev1.PersistentVolume) *corev1.PersistentVolume {
	out := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: slimMeta(v.ObjectMeta, nil),
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         v.Spec.Capacity,
			AccessModes:      v.Spec.AccessModes,
			StorageClassName: v.Spec.StorageClassName,
			NodeAffinity:     v.Spec.NodeAffinity,
			VolumeMode:       v.Spec.VolumeMode,
		},
		Status: corev1.PersistentVolumeStatus{Phase: v.Status.Phase},
	}
	if r := v.Spec.ClaimRef; r != nil {
		out.Spec.ClaimRef = &corev1.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
	}
	return out
}

// SanitizeStorageClass keeps the provisioner, binding mode and allowed
// topologies; not its parameters.
func SanitizeStorageClass(s *storagev1.StorageClass) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		TypeMeta:          metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:        slimMeta(s.ObjectMeta, nil),
		Provisioner:       s.Provisioner,
		VolumeBindingMode: s.VolumeBindingMode,
		AllowedTopologies: s.AllowedTopologies,
	}
}

// SanitizeNamespace keeps the name and labels (namespace selectors).
func SanitizeNamespace(n *corev1.Namespace) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: slimMeta(n.ObjectMeta, nil)}
}
