package cachetrim_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/operator/cachetrim"
)

// needed is a Pod with every field some controller reads set (scheduling
// constraints for the engine, disruption's annotations, priorities and
// owners, termination's grace period and tolerations, the hand-off's
// PodScheduled message...). Pod must keep every one of them.
func needed() *corev1.Pod {
	now := metav1.NewTime(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC))
	req := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("380m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7", GenerateName: "p-",
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{"karpenter.sh/do-not-disrupt": "true"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}},
			Finalizers:        []string{"example.com/f"},
			CreationTimestamp: now, DeletionTimestamp: &now,
		},
		Spec: corev1.PodSpec{
			NodeName:     "n1",
			NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "m6g.xlarge"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}}}}}},
			Tolerations:                   []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints:     []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}},
			SchedulerName:                 "default-scheduler",
			Priority:                      ptr.To[int32](1000),
			PriorityClassName:             "high",
			PreemptionPolicy:              ptr.To(corev1.PreemptLowerPriority),
			Overhead:                      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
			RuntimeClassName:              ptr.To("kata"),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			HostNetwork:                   true,
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			SchedulingGates:               []corev1.PodSchedulingGate{{Name: "g"}},
			Resources:                     &req,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			ServiceAccountName:            "default",
			InitContainers:                []corev1.Container{{Name: "sidecar", Resources: req, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
			Containers: []corev1.Container{{Name: "app", Resources: req,
				Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3")}}}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/3 nodes are available: 3 Insufficient cpu.", LastTransitionTime: now}},
			NominatedNodeName: "n2",
			StartTime:         &now,
			Reason:            "Evicted",
			QOSClass:          corev1.PodQOSBurstable,
		},
	}
}

func TestPodKeepsWhatControllersRead(t *testing.T) {
	trim := cachetrim.NewTrimmer()
	want := needed()
	got := needed()
	trim.Pod(got)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("trimming dropped a field the controllers read:\n got %+v\nwant %+v", got, want)
	}
}

func TestPodDropsWhatOnlyTheKubeletReads(t *testing.T) {
	trim := cachetrim.NewTrimmer()
	p := needed()
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	c := &p.Spec.Containers[0]
	c.Image, c.Command, c.Env = "nginx", []string{"nginx"}, []corev1.EnvVar{{Name: "A", Value: "b"}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	c.LivenessProbe = &corev1.Probe{InitialDelaySeconds: 3}
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 9090}) // no host port
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}})
	readyAt := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: readyAt, Reason: "x", Message: "containers with unready status: [app]"},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nginx", ImageID: "sha256:x"}}
	p.Status.PodIPs, p.Status.HostIP = []corev1.PodIP{{IP: "10.0.0.1"}}, "10.0.0.2"

	trim.Pod(p)
	c = &p.Spec.Containers[0]
	if p.ManagedFields != nil || c.Image != "" || c.Command != nil || c.Env != nil || c.VolumeMounts != nil || c.LivenessProbe != nil {
		t.Errorf("container kept kubelet-only fields: %+v (managed fields %v)", c, p.ManagedFields)
	}
	if len(c.Ports) != 1 || c.Ports[0].HostPort != 8080 {
		t.Errorf("ports %+v, want only the host port", c.Ports)
	}
	if p.Spec.EphemeralContainers != nil || p.Status.ContainerStatuses != nil || p.Status.PodIPs != nil || p.Status.HostIP != "" {
		t.Errorf("kept ephemeral containers, container statuses or IPs: %+v %+v", p.Spec.EphemeralContainers, p.Status)
	}
	if got := p.Spec.Volumes[len(p.Spec.Volumes)-1].Name; len(p.Spec.Volumes) != 4 || got != "host" {
		t.Errorf("volumes %+v, want the four that constrain placement, not the token", p.Spec.Volumes)
	}
	// PodScheduled whole; of Ready (the pod metrics) the status and
	// transition time only.
	wantReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readyAt}
	if len(p.Status.Conditions) != 2 || p.Status.Conditions[0].Type != corev1.PodScheduled || p.Status.Conditions[1] != wantReady {
		t.Errorf("conditions %+v, want PodScheduled and %+v", p.Status.Conditions, wantReady)
	}
}

func TestNodeKeepsMetadataSpecAndWhatControllersRead(t *testing.T) {
	trim := cachetrim.NewTrimmer()
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"karpenter.sh/nodepool": "default"},
			Annotations: map[string]string{"karpenter.sh/nodepool-hash": "1"}, Finalizers: []string{"karpenter.sh/termination"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-1", Unschedulable: true,
			Taints: []corev1.Taint{{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:      []corev1.ContainerImage{{Names: []string{"nginx"}, SizeBytes: 1}},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", BootID: "boot-1"},
		},
	}
	want := n.DeepCopy()
	want.ManagedFields = nil
	// The boot id stays: a reboot for repair ends when it changes.
	want.Status.Images, want.Status.NodeInfo = nil, corev1.NodeSystemInfo{BootID: "boot-1"}
	out, err := trim.Transform(n)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(out, want) {
		t.Fatalf("trimmed node\n got %+v\nwant %+v", out, want)
	}
}

// TestGuardRefusesWholeObjectWrites: an Update (or whole-object patch) of
// a trimmed Pod or Node would wipe what the cache dropped on the server;
// the manager's client refuses it, while patches of what changed pass.
func TestGuardRefusesWholeObjectWrites(t *testing.T) {
	ctx := context.Background()
	pod := needed()
	pod.DeletionTimestamp, pod.Finalizers = nil, nil
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}
	c := cachetrim.Guard(fake.NewClientBuilder().WithObjects(pod, node, cm).WithStatusSubresource(pod, node).Build())

	refused := []struct {
		name string
		err  error
	}{
		{"update pod", c.Update(ctx, pod.DeepCopy())},
		{"update node", c.Update(ctx, node.DeepCopy())},
		{"status update pod", c.Status().Update(ctx, pod.DeepCopy())},
		{"subresource update node", c.SubResource("status").Update(ctx, node.DeepCopy())},
		{"merge patch of the whole pod", c.Patch(ctx, pod.DeepCopy(), client.Merge)},
		{"status merge patch of the whole node", c.Status().Patch(ctx, node.DeepCopy(), client.Merge)},
	}
	for _, r := range refused {
		if !errors.Is(r.err, cachetrim.ErrTrimmedWrite) {
			t.Errorf("%s: error %v, want ErrTrimmedWrite", r.name, r.err)
		}
	}

	cur := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, cur); err != nil {
		t.Fatal(err)
	}
	base := cur.DeepCopy()
	cur.Spec.Unschedulable = true
	allowed := []struct {
		name string
		err  error
	}{
		{"merge patch from a copy", c.Patch(ctx, cur, client.MergeFrom(base))},
		{"raw status patch", c.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}},
			client.RawPatch(types.MergePatchType, []byte(`{"status":{"nominatedNodeName":"n1"}}`)))},
		{"update of another kind", c.Update(ctx, cm)},
	}
	for _, a := range allowed {
		if a.err != nil {
			t.Errorf("%s: %v", a.name, a.err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, cur); err != nil || !cur.Spec.Unschedulable {
		t.Errorf("the patch did not land: %v %+v", err, cur.Spec)
	}
}

// TestPodsOfOneKindShareTheirRepeatedParts: two pods of one ReplicaSet end
// up pointing at one labels map, one node selector, one tolerations and
// owner references slice and one requests map, with their values intact;
// a pod that differs gets its own.
func TestPodsOfOneKindShareTheirRepeatedParts(t *testing.T) {
	trim := cachetrim.NewTrimmer()
	a, b, other := needed(), needed(), needed()
	a.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](300)
	b.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](300)
	b.Name, b.UID = "q", "u2"
	other.Name, other.UID, other.Labels = "r", "u3", map[string]string{"app": "api"}
	other.Spec.Containers[0].Ports[0].HostPort = 8081
	other.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"us-east-1b"}
	other.Spec.TopologySpreadConstraints[0].MaxSkew = 2
	other.Status.Conditions[0].Message = "0/4 nodes are available: 4 Insufficient cpu."
	for _, p := range []*corev1.Pod{a, b, other} {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		trim.Pod(p)
	}
	for what, pair := range map[string][2]any{
		"containers": {a.Spec.Containers, b.Spec.Containers}, "init containers": {a.Spec.InitContainers, b.Spec.InitContainers},
		"annotations": {a.Annotations, b.Annotations}, "affinity": {a.Spec.Affinity, b.Spec.Affinity},
		"spread": {a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints}, "security context": {a.Spec.SecurityContext, b.Spec.SecurityContext},
	} {
		if fmt.Sprintf("%p", pair[0]) != fmt.Sprintf("%p", pair[1]) {
			t.Errorf("pods of one kind do not share their %s", what)
		}
	}
	// What differs is not shared: each field the key spells out.
	for what, pair := range map[string][2]any{
		"containers": {a.Spec.Containers, other.Spec.Containers}, "affinity": {a.Spec.Affinity, other.Spec.Affinity},
		"spread": {a.Spec.TopologySpreadConstraints, other.Spec.TopologySpreadConstraints},
	} {
		if fmt.Sprintf("%p", pair[0]) == fmt.Sprintf("%p", pair[1]) {
			t.Errorf("pods that differ share their %s", what)
		}
	}
	if other.Spec.Containers[0].Ports[0].HostPort != 8081 || a.Spec.Containers[0].Ports[0].HostPort != 8080 ||
		other.Status.Conditions[0].Message == a.Status.Conditions[0].Message || other.Spec.TopologySpreadConstraints[0].MaxSkew != 2 {
		t.Errorf("sharing mixed up the pods' values")
	}
	same := func(what string, x, y any) bool { return fmt.Sprintf("%p", x) == fmt.Sprintf("%p", y) }
	if !same("labels", a.Labels, b.Labels) || !same("node selector", a.Spec.NodeSelector, b.Spec.NodeSelector) ||
		!same("tolerations", a.Spec.Tolerations, b.Spec.Tolerations) || !same("owners", a.OwnerReferences, b.OwnerReferences) ||
		!same("requests", a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests) {
		t.Errorf("pods of one kind do not share their repeated parts")
	}
	if same("labels", a.Labels, other.Labels) || other.Labels["app"] != "api" || a.Labels["app"] != "web" {
		t.Errorf("labels %v and %v shared or changed", a.Labels, other.Labels)
	}
	want := needed()
	want.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](300)
	want.Spec.SecurityContext = &corev1.PodSecurityContext{}
	if !equality.Semantic.DeepEqual(a, want) {
		t.Errorf("sharing changed the pod: %+v", a)
	}
}

// fleetNode is a node as a fleet has thousands of: the labels of its
// instance type and pool, a unique name and provider ID.
func fleetNode(i int) *corev1.Node {
	name := fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250)
	labels := map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot", "karpenter.sh/initialized": "true",
		"karpenter.sh/registered": "true", "node.kubernetes.io/instance-type": "m5.xlarge", "kubernetes.io/arch": "amd64",
		"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1",
		"karpenter.k8s.aws/instance-category": "m", "karpenter.k8s.aws/instance-family": "m5", "karpenter.k8s.aws/instance-generation": "5",
		"karpenter.k8s.aws/instance-size": "xlarge", "karpenter.k8s.aws/instance-cpu": "4", "karpenter.k8s.aws/instance-memory": "16384",
		"karpenter.k8s.aws/instance-hypervisor": "nitro", "karpenter.k8s.aws/instance-network-bandwidth": "1250",
		"karpenter.k8s.aws/instance-ebs-bandwidth": "4750", "karpenter.k8s.aws/instance-encryption-in-transit-supported": "false",
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/instance-type": "m5.xlarge",
		"failure-domain.beta.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/region": "us-east-1",
		"kubernetes.io/hostname": name, "type": "kwok",
	}
	// Each string its own allocation, as the decoder makes them.
	own := map[string]string{}
	for k, v := range labels {
		own[string([]byte(k))] = string([]byte(v))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: own,
			Annotations: map[string]string{string([]byte("node.alpha.kubernetes.io/ttl")): string([]byte("0")), string([]byte("kwok.x-k8s.io/node")): string([]byte("fake"))}},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///us-east-1a/i-%017x", i)},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"), corev1.ResourcePods: resource.MustParse("58")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: string([]byte("KubeletReady")),
				Message: string([]byte("kubelet is posting ready status"))}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250)}},
		},
	}
}

// Nodes of one instance type hold their repeated strings once and share
// their capacity and allocatable; nothing of a node changes.
func TestNodesShareTheirRepeatedParts(t *testing.T) {
	trim := cachetrim.NewTrimmer()
	a, b := fleetNode(1), fleetNode(2)
	wantA := a.DeepCopy()
	for _, n := range []*corev1.Node{a, b} {
		if _, err := trim.Transform(n); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, wantA) {
		t.Fatalf("the node changed:\n got %+v\nwant %+v", a, wantA)
	}
	if fmt.Sprintf("%p", a.Status.Allocatable) != fmt.Sprintf("%p", b.Status.Allocatable) || fmt.Sprintf("%p", a.Status.Capacity) != fmt.Sprintf("%p", b.Status.Capacity) {
		t.Error("nodes of one type do not share capacity and allocatable")
	}
	key := "node.kubernetes.io/instance-type"
	for k := range a.Labels {
		if k == key && unsafe.StringData(k) != unsafe.StringData(internedKey(b.Labels, key)) {
			t.Error("the label key is held twice")
		}
	}
	if unsafe.StringData(a.Labels[key]) != unsafe.StringData(b.Labels[key]) ||
		unsafe.StringData(a.Status.Conditions[0].Message) != unsafe.StringData(b.Status.Conditions[0].Message) {
		t.Error("label values or condition messages are held twice")
	}
	if a.Labels["kubernetes.io/hostname"] == b.Labels["kubernetes.io/hostname"] {
		t.Error("the hostnames were mixed up")
	}
}

func internedKey(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}

// A NodeClaim comes out of the cache transform equal but for its managed
// fields, with its requirement values held once across NodeClaims.
func TestNodeClaimStringsInterned(t *testing.T) {
	trim := cachetrim.NewTrimmer()
	mk := func(name string) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"karpenter.sh/nodepool": string([]byte("default"))},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "dovetail"}}},
			Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "node.kubernetes.io/instance-type",
				Operator: corev1.NodeSelectorOpIn, Values: []string{string([]byte("m5.large")), string([]byte("m5.xlarge"))}}}},
			Status: karpv1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-" + name,
				Conditions: []karpv1.Condition{{Type: "Launched", Status: metav1.ConditionTrue, Reason: string([]byte("Launched"))}}},
		}
	}
	a, b := mk("a"), mk("b")
	want := a.DeepCopy()
	want.ManagedFields = nil
	for _, nc := range []*karpv1.NodeClaim{a, b} {
		if _, err := trim.Transform(nc); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("the NodeClaim changed:\n got %+v\nwant %+v", a, want)
	}
	if unsafe.StringData(a.Spec.Requirements[0].Values[1]) != unsafe.StringData(b.Spec.Requirements[0].Values[1]) ||
		unsafe.StringData(a.Labels["karpenter.sh/nodepool"]) != unsafe.StringData(b.Labels["karpenter.sh/nodepool"]) ||
		unsafe.StringData(a.Status.Conditions[0].Reason) != unsafe.StringData(b.Status.Conditions[0].Reason) {
		t.Error("NodeClaims hold their repeated strings twice")
	}
}

// BenchmarkNodeRetained reports the heap 3,000 fleet nodes keep
// (retained-B/node), as decoded (raw) and after the cache's transform.
func BenchmarkNodeRetained(b *testing.B) {
	trim := cachetrim.NewTrimmer()
	const count = 3000
	for _, mode := range []string{"raw", "transformed"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				nodes := make([]*corev1.Node, count)
				for i := range nodes {
					nodes[i] = fleetNode(i)
					if mode == "transformed" {
						if _, err := trim.Transform(nodes[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(nodes)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/count, "retained-B/node")
			}
		})
	}
}

// Each Trimmer has its own tables (no state at package level): equal pods
// trimmed by one Trimmer share their parts, by two they do not.
func TestTrimmersShareNothing(t *testing.T) {
	one, two := cachetrim.NewTrimmer(), cachetrim.NewTrimmer()
	a, b, c := needed(), needed(), needed()
	b.Name, b.UID = "q", "u2"
	c.Name, c.UID = "r", "u3"
	one.Pod(a)
	one.Pod(b)
	two.Pod(c)
	if fmt.Sprintf("%p", a.Spec.Containers) != fmt.Sprintf("%p", b.Spec.Containers) {
		t.Errorf("one Trimmer does not share equal pods' containers")
	}
	if fmt.Sprintf("%p", a.Spec.Containers) == fmt.Sprintf("%p", c.Spec.Containers) {
		t.Errorf("two Trimmers share a table")
	}
}
