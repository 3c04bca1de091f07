package snapshot_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

func nodeClass(name string, mut ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	for _, m := range mut {
		m(nc)
	}
	return nc
}

func nodePool(name, class string, mut ...func(*karpv1.NodePool)) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}
	for _, m := range mut {
		m(np)
	}
	return np
}

func pod(ns, name string, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.Spec.Containers = []corev1.Container{{Name: "c"}}
	for _, m := range mut {
		m(p)
	}
	return p
}

// fakeType is a tiny instance type for Build tests (no catalog needed).
func fakeType(name, cpu, mem string) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:      name,
		Labels:    map[string]string{corev1.LabelInstanceTypeStable: name},
		Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("10")},
		Overhead:  cloudprovider.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Offerings: cloudprovider.Offerings{{Zone: "z1", CapacityType: "on-demand", Price: 1, Available: true}},
	}
}

func TestKubeletSettings(t *testing.T) {
	gi := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	tests := []struct {
		name string
		nc   *awsv1.EC2NodeClass
		want catalog.KubeletSettings
		errs int
	}{
		{name: "nil class is all defaults", nc: nil, want: catalog.KubeletSettings{}},
		{name: "alias gives the family", nc: nodeClass("a"), want: catalog.KubeletSettings{AMIFamily: "AL2023"}},
		{name: "kubelet fields are copied", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{
				MaxPods: ptr.To[int32](30), PodsPerCore: ptr.To[int32](4),
				KubeReserved: map[string]string{"cpu": "200m"}, SystemReserved: map[string]string{"memory": "1Gi"},
				EvictionHard: map[string]string{"memory.available": "5%"}, EvictionSoft: map[string]string{"nodefs.available": "15%"},
			}
		}), want: catalog.KubeletSettings{
			AMIFamily: "AL2023", MaxPods: ptr.To[int32](30), PodsPerCore: ptr.To[int32](4),
			KubeReserved: map[string]string{"cpu": "200m"}, SystemReserved: map[string]string{"memory": "1Gi"},
			EvictionHard: map[string]string{"memory.available": "5%"}, EvictionSoft: map[string]string{"nodefs.available": "15%"},
		}},
		{name: "AL2023 root volume by device name", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: gi("500Gi")}},
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: gi("80Gi")}},
			}
		}), want: catalog.KubeletSettings{AMIFamily: "AL2023", EphemeralVolumeSize: gi("80Gi")}},
		{name: "Bottlerocket uses its data volume", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: gi("4Gi")}},
				{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: gi("100Gi")}},
			}
		}), want: catalog.KubeletSettings{AMIFamily: "Bottlerocket", EphemeralVolumeSize: gi("100Gi")}},
		{name: "rootVolume flag wins over the device name", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMIFamily = ptr.To("Custom")
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-1"}}
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: gi("30Gi")}},
				{DeviceName: ptr.To("/dev/sdf"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: gi("60Gi")}},
			}
		}), want: catalog.KubeletSettings{AMIFamily: "Custom", EphemeralVolumeSize: gi("60Gi")}},
		{name: "instance store policy", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			p := awsv1.InstanceStorePolicy("RAID0")
			nc.Spec.InstanceStorePolicy = &p
		}), want: catalog.KubeletSettings{AMIFamily: "AL2023", InstanceStorePolicy: "RAID0"}},
		{name: "Windows is computed as the default family", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
		}), want: catalog.KubeletSettings{}},
		{name: "bad reserved quantity is reported with its path", nc: nodeClass("a", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"memory": "lots"}}
		}), errs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := snapshot.KubeletSettings(tc.nc)
			if len(errs) != tc.errs {
				t.Fatalf("errors = %v, want %d", errs, tc.errs)
			}
			if tc.errs > 0 {
				if !strings.Contains(errs[0].Field, "spec.kubelet.kubeReserved") {
					t.Errorf("error field %q does not name spec.kubelet.kubeReserved", errs[0].Field)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCatalogSourceHonoursKubelet(t *testing.T) {
	src := snapshot.NewCatalogSource(catalog.Builtin(), "us-east-1", nil)
	plain := nodeClass("plain")
	capped := nodeClass("capped", func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](7)}
	})
	a, err := src.InstanceTypes(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.InstanceTypes(nil, capped)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("got %d and %d types", len(a), len(b))
	}
	for i := range b {
		pods := b[i].Capacity[corev1.ResourcePods]
		if pods.Value() != 7 {
			t.Fatalf("%s: pods = %s with maxPods 7", b[i].Name, pods.String())
		}
	}
	if p := a[0].Capacity[corev1.ResourcePods]; p.Value() == 7 && a[1].Capacity.Pods().Value() == 7 {
		t.Errorf("default class also capped at 7 pods")
	}
	// A second class with the same settings shares the cached slice.
	again, err := src.InstanceTypes(nil, nodeClass("other"))
	if err != nil {
		t.Fatal(err)
	}
	if &again[0] != &a[0] {
		t.Errorf("equal settings were not served from the cache")
	}
	// Bad settings are refused.
	bad := nodeClass("bad", func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "-1"}}
	})
	if _, err := src.InstanceTypes(nil, bad); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("bad settings: err = %v, want an error naming the class", err)
	}
}

func TestNodePool(t *testing.T) {
	tests := []struct {
		name        string
		np          *karpv1.NodePool
		nc          *awsv1.EC2NodeClass
		unsupported string
		errField    string
	}{
		{name: "plain", np: nodePool("p", "c"), nc: nodeClass("c")},
		{name: "windows alias", np: nodePool("p", "c"), nc: nodeClass("c", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2019@latest"}}
		}), unsupported: snapshot.ReasonWindows},
		{name: "windows family", np: nodePool("p", "c"), nc: nodeClass("c", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-1"}}
			nc.Spec.AMIFamily = ptr.To("Windows2025")
		}), unsupported: snapshot.ReasonWindows},
		{name: "reserved only", np: nodePool("p", "c", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: karpv1.CapacityTypeLabelKey, Operator: "In", Values: []string{"reserved"}}}
		}), nc: nodeClass("c")},
		{name: "static pool", np: nodePool("p", "c", func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(3)) }),
			nc: nodeClass("c"), unsupported: snapshot.ReasonStaticPool},
		{name: "reserved or spot is supported", np: nodePool("p", "c", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: karpv1.CapacityTypeLabelKey, Operator: "In", Values: []string{"reserved", "spot"}}}
		}), nc: nodeClass("c")},
		{name: "bad requirement", np: nodePool("p", "c", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: "a", Operator: "Exists"},
				{Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gt", Values: []string{"four"}},
			}
		}), nc: nodeClass("c"), errField: "spec.template.spec.requirements[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snapshot.NodePool(tc.np, tc.nc, nil, nil)
			if tc.errField != "" {
				var inv *snapshot.InvalidObjectError
				if !errors.As(err, &inv) || !errors.Is(err, snapshot.ErrInvalidObject) {
					t.Fatalf("err = %v, want *InvalidObjectError", err)
				}
				if inv.Errs[0].Field != tc.errField {
					t.Errorf("field = %q, want %q", inv.Errs[0].Field, tc.errField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got.UnsupportedReason, tc.unsupported) || (tc.unsupported == "") != (got.UnsupportedReason == "") {
				t.Errorf("UnsupportedReason = %q, want prefix %q", got.UnsupportedReason, tc.unsupported)
			}
		})
	}
}

func TestNodePoolFields(t *testing.T) {
	np := nodePool("team-b", "c", func(np *karpv1.NodePool) {
		np.Spec.Weight = ptr.To[int32](30)
		np.Spec.Template.Labels = map[string]string{"team": "b"}
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: "b", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "agent", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: "karpenter.k8s.aws/instance-family", Operator: "Exists", MinValues: ptr.To(3)},
		}
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	})
	usage := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	got, err := snapshot.NodePool(np, nodeClass("c"), nil, usage)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "team-b" || got.Weight != 30 || got.Labels["team"] != "b" || len(got.Taints) != 1 || len(got.StartupTaints) != 1 {
		t.Errorf("fields not copied: %+v", got)
	}
	r := got.Requirements.Get("karpenter.k8s.aws/instance-family")
	if r == nil || r.MinValues() == nil || *r.MinValues() != 3 {
		t.Errorf("minValues lost: %v", got.Requirements)
	}
	if q := got.Limits[corev1.ResourceCPU]; q.Value() != 100 {
		t.Errorf("limits = %v", got.Limits)
	}
	if q := got.Usage[corev1.ResourceCPU]; q.Value() != 8 {
		t.Errorf("usage = %v", got.Usage)
	}
}

func TestBuildMissingNodeClass(t *testing.T) {
	_, err := snapshot.Build(&snapshot.Cluster{
		NodePools: []*karpv1.NodePool{nodePool("general", "nope")}, NodeClasses: []*awsv1.EC2NodeClass{nodeClass("default")},
	}, snapshot.StaticSource(nil), snapshot.Options{})
	var nf *snapshot.NodeClassNotFoundError
	if !errors.Is(err, snapshot.ErrNodeClassNotFound) || !errors.As(err, &nf) {
		t.Fatalf("err = %v, want ErrNodeClassNotFound", err)
	}
	if nf.NodePool != "general" || nf.NodeClass != "nope" || !strings.Contains(err.Error(), `"general"`) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("error does not name both: %v", err)
	}
}

func TestBuildClassifiesObjects(t *testing.T) {
	small, large := fakeType("small", "2", "4Gi"), fakeType("large", "8", "32Gi")
	src := snapshot.StaticSource{small, large}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}}}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	deleting := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	deleting.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-x", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}}}
	claim.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"small", "large"}}}
	registered := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-y"}}
	registered.Status.NodeName = "n1"
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"}}
	c := &snapshot.Cluster{
		NodePools:   []*karpv1.NodePool{nodePool("general", "default")},
		NodeClasses: []*awsv1.EC2NodeClass{nodeClass("default")},
		Nodes:       []*corev1.Node{node, deleting},
		NodeClaims:  []*karpv1.NodeClaim{claim, registered},
		DaemonSets:  []*appsv1.DaemonSet{ds},
		Namespaces:  []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{"team": "a"}}}},
		Pods: []*corev1.Pod{
			pod("apps", "bound", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }),
			pod("apps", "done", func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Phase = corev1.PodSucceeded }),
			pod("apps", "elsewhere", func(p *corev1.Pod) { p.Spec.NodeName = "ghost" }),
			pod("apps", "nominated", func(p *corev1.Pod) { p.Status.NominatedNodeName = "general-x" }),
			pod("apps", "pending"),
			pod("other", "pending"),
			pod("kube-system", "agent-abc", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}}
			}),
		},
		Unavailable: []engine.OfferingKey{{InstanceType: "small", Zone: "z1", CapacityType: "on-demand"}},
	}
	in, err := snapshot.Build(c, src, snapshot.Options{Region: "r1", Engine: engine.Options{Seed: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if in.Region != "r1" || in.Options.Seed != 7 || len(in.DaemonSets) != 1 || len(in.Unavailable) != 1 {
		t.Errorf("options not copied: region %q seed %d", in.Region, in.Options.Seed)
	}
	if len(in.Nodes) != 2 || in.Nodes[0].NodePool != "general" || in.Nodes[0].MarkedForDeletion || !in.Nodes[1].MarkedForDeletion {
		t.Fatalf("nodes = %+v", in.Nodes)
	}
	if len(in.Nodes[0].Pods) != 1 || in.Nodes[0].Pods[0].Name != "bound" {
		t.Errorf("n1 pods = %v, want [bound]", podNames(in.Nodes[0].Pods))
	}
	if len(in.InFlight) != 1 || in.InFlight[0].Name != "general-x" || in.InFlight[0].NodePool != "general" {
		t.Fatalf("in flight = %+v, want general-x only (general-y has its node)", in.InFlight)
	}
	ifc := in.InFlight[0]
	if !reflect.DeepEqual(ifc.InstanceTypeOptions, []string{"large", "small"}) || len(ifc.Pods) != 1 || ifc.Pods[0].Name != "nominated" {
		t.Errorf("in-flight claim = %+v", ifc)
	}
	// Allocatable estimate: the smaller type's allocatable (2 cpu - 100m).
	if q := ifc.Allocatable[corev1.ResourceCPU]; q.MilliValue() != 1900 {
		t.Errorf("in-flight allocatable cpu = %s, want 1900m", q.String())
	}
	if got := podNames(in.Pods); !reflect.DeepEqual(got, []string{"apps/pending", "other/pending"}) {
		t.Errorf("pending = %v", got)
	}
	// Usage: n1's 4 cpu + the in-flight claim's largest option, 8 cpu; 2 nodes.
	u := in.NodePools[0].Usage
	if cpu, nodes := u[corev1.ResourceCPU], u["nodes"]; cpu.Value() != 12 || nodes.Value() != 2 {
		t.Errorf("usage = %v, want cpu 12 nodes 2", u)
	}
	if in.NamespaceLabels["apps"]["team"] != "a" || in.NamespaceLabels["apps"][corev1.LabelMetadataName] != "apps" ||
		in.NamespaceLabels["other"][corev1.LabelMetadataName] != "other" {
		t.Errorf("namespace labels = %v", in.NamespaceLabels)
	}
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestVolumeZones(t *testing.T) {
	zoneAffinity := func(key string, terms ...[]string) *corev1.VolumeNodeAffinity {
		na := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
		for _, zs := range terms {
			na.Required.NodeSelectorTerms = append(na.Required.NodeSelectorTerms, corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: zs}}})
		}
		return na
	}
	pv := func(name string, mut func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mut(v)
		return v
	}
	pvc := func(name, volume string, class *string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		c.Spec.VolumeName = volume
		c.Spec.StorageClassName = class
		return c
	}
	pvs := []*corev1.PersistentVolume{
		pv("pv-zone", func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = zoneAffinity(corev1.LabelTopologyZone, []string{"b"})
		}),
		pv("pv-legacy", func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = zoneAffinity(corev1.LabelFailureDomainBetaZone, []string{"c"})
		}),
		pv("pv-ebs", func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = zoneAffinity("topology.ebs.csi.aws.com/zone", []string{"a"}, []string{"c", "a"})
		}),
		pv("pv-labels", func(v *corev1.PersistentVolume) { v.Labels = map[string]string{corev1.LabelTopologyZone: "b__a"} }),
		pv("pv-hostname", func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = zoneAffinity(corev1.LabelHostname, []string{"n1"})
		}),
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	classes := []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, VolumeBindingMode: &wffc, AllowedTopologies: []corev1.TopologySelectorTerm{{
			MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"c", "b"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "anywhere", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, VolumeBindingMode: &wffc},
	}
	pvcs := []*corev1.PersistentVolumeClaim{
		pvc("bound-zone", "pv-zone", nil),
		pvc("bound-legacy", "pv-legacy", nil),
		pvc("bound-ebs", "pv-ebs", nil),
		pvc("bound-labels", "pv-labels", nil),
		pvc("bound-hostname", "pv-hostname", nil),
		pvc("bound-missing", "pv-gone", nil),
		pvc("unbound-zonal", "", ptr.To("zonal")),
		pvc("unbound-default", "", nil),
	}
	got := snapshot.VolumeZones(pvcs, pvs, classes)
	want := map[string][]string{
		"ns/bound-zone":    {"b"},
		"ns/bound-legacy":  {"c"},
		"ns/bound-ebs":     {"a", "c"},
		"ns/bound-labels":  {"a", "b"},
		"ns/unbound-zonal": {"b", "c"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("VolumeZones =\n%v\nwant\n%v", got, want)
	}
}

// TestBuildPrices: a node costs what its NodeClaim recorded at launch, else
// its offering's price by its labels; an in-flight claim what it recorded.
func TestBuildPrices(t *testing.T) {
	small := fakeType("small", "2", "4Gi")
	src := snapshot.StaticSource{small}
	off := small.Offerings[0]
	labelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "by-labels", Labels: map[string]string{
		karpv1.NodePoolLabelKey: "general", corev1.LabelInstanceTypeStable: "small",
		corev1.LabelTopologyZone: off.Zone, karpv1.CapacityTypeLabelKey: off.CapacityType}}}
	recorded := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "recorded", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}}}
	unknown := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unknown", Labels: map[string]string{corev1.LabelInstanceTypeStable: "nope"}}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Annotations: map[string]string{karpv1.AnnotationPricePerHour: "0.25"}}}
	claim.Status.NodeName = "recorded"
	flying := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"},
		Annotations: map[string]string{karpv1.AnnotationPricePerHour: "0.5"}}}
	bad := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c3", Annotations: map[string]string{karpv1.AnnotationPricePerHour: "NaN"}}}
	c := &snapshot.Cluster{NodePools: []*karpv1.NodePool{nodePool("general", "default")}, NodeClasses: []*awsv1.EC2NodeClass{nodeClass("default")},
		Nodes: []*corev1.Node{labelled, recorded, unknown}, NodeClaims: []*karpv1.NodeClaim{claim, flying, bad}}
	in, err := snapshot.Build(c, src, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := []float64{in.Nodes[0].PricePerHour, in.Nodes[1].PricePerHour, in.Nodes[2].PricePerHour}
	if want := []float64{off.Price, 0.25, 0}; !reflect.DeepEqual(got, want) || off.Price <= 0 {
		t.Errorf("node prices %v, want %v", got, want)
	}
	prices := map[string]float64{}
	for _, f := range in.InFlight {
		prices[f.Name] = f.PricePerHour
	}
	if prices["c2"] != 0.5 || prices["c3"] != 0 {
		t.Errorf("in-flight prices %v, want c2 0.5 and c3 0", prices)
	}
}

// TestDisruptionPolicy: unset fields get the API's defaults, Never stays
// nil, budgets convert field by field.
func TestDisruptionPolicy(t *testing.T) {
	np := nodePool("p", "c")
	np.Spec.Disruption = karpv1.Disruption{}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{}
	pp := snapshot.DisruptionPolicy(np)
	if pp.ConsolidateAfter == nil || *pp.ConsolidateAfter != 0 || pp.ExpireAfter == nil || *pp.ExpireAfter != 720*time.Hour || pp.Budgets != nil {
		t.Errorf("defaults: %+v", pp)
	}
	sched := "0 9 * * 1-5"
	np.Spec.Disruption = karpv1.Disruption{ConsolidateAfter: karpv1.MustParseNillableDuration("Never"), ConsolidationPolicy: karpv1.ConsolidationPolicyBalanced,
		Budgets: []karpv1.Budget{{Nodes: "20%", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}, Schedule: &sched, Duration: &metav1.Duration{Duration: 8 * time.Hour}}}}
	np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("Never")
	pp = snapshot.DisruptionPolicy(np)
	if pp.ConsolidateAfter != nil || pp.ExpireAfter != nil || pp.ConsolidationPolicy != "Balanced" || len(pp.Budgets) != 1 ||
		pp.Budgets[0].Nodes != "20%" || pp.Budgets[0].Schedule != sched || pp.Budgets[0].Duration != 8*time.Hour || pp.Budgets[0].Reasons[0] != "Drifted" {
		t.Errorf("explicit: %+v", pp)
	}
}
