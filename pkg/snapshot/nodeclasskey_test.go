package snapshot_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// TestNodePoolEC2NodeClassKey: karpenter.k8s.aws/ec2nodeclass means on a
// NodePool what it means to the peer. Every node of a pool carries its
// EC2NodeClass's name under that key, so a pod selecting a class gets a node
// of a pool referencing that class (not the cheaper pool of another class),
// and a pool whose requirement on the key excludes its own class launches
// nothing, saying why.
func TestNodePoolEC2NodeClassKey(t *testing.T) {
	types := []*cloudprovider.InstanceType{fakeType("small", "4", "16Gi")}
	cheap := types[0].Offerings[0]
	cheap.Price = 0.1
	cheapTypes := []*cloudprovider.InstanceType{fakeType("small", "4", "16Gi")}
	cheapTypes[0].Offerings = cloudprovider.Offerings{cheap}
	onClass := func(class string) func(*karpv1.NodePool) {
		return func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: awsv1.LabelNodeClass, Operator: corev1.NodeSelectorOpIn, Values: []string{class}},
			}
		}
	}
	general, err := snapshot.NodePool(nodePool("general", "general"), nodeClass("general"), cheapTypes, nil)
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := snapshot.NodePool(nodePool("gpu", "gpu", onClass("gpu")), nodeClass("gpu"), types, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gpu.UnsupportedReason != "" || gpu.Labels[awsv1.LabelNodeClass] != "gpu" {
		t.Fatalf("pool gpu: unsupported %q, labels %v; want supported with %s=gpu", gpu.UnsupportedReason, gpu.Labels, awsv1.LabelNodeClass)
	}
	wrong, err := snapshot.NodePool(nodePool("wrong", "general", onClass("gpu")), nodeClass("general"), cheapTypes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wrong.UnsupportedReason, `excludes its own EC2NodeClass "general"`) {
		t.Errorf("a pool whose ec2nodeclass requirement excludes its own class: UnsupportedReason %q", wrong.UnsupportedReason)
	}

	selecting := pod("default", "trainer", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{awsv1.LabelNodeClass: "gpu"}
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	})
	// 3 CPUs each: the two pods cannot share a 4-CPU node.
	plain := pod("default", "web", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	})
	plan, err := engine.Solve(&engine.Input{Pods: []*corev1.Pod{selecting, plain}, NodePools: []engine.NodePool{general, gpu, wrong}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %+v", plan.Unschedulable)
	}
	pools := map[string]string{}
	for _, nc := range plan.NodeClaims {
		for _, p := range nc.Pods {
			pools[p.Name] = nc.NodePool
		}
		if got, want := nc.Labels[awsv1.LabelNodeClass], nc.NodePool; got != want {
			t.Errorf("node %s of pool %s: label %s=%q, want %q", nc.Name, nc.NodePool, awsv1.LabelNodeClass, got, want)
		}
		if nc.NodePool == "wrong" {
			t.Errorf("pool wrong, whose requirement excludes its own class, got node %s", nc.Name)
		}
	}
	if pools["trainer"] != "gpu" {
		t.Errorf("the pod selecting %s=gpu went to pool %q, want gpu", awsv1.LabelNodeClass, pools["trainer"])
	}
	if pools["web"] != "general" {
		t.Errorf("the plain pod went to pool %q, want the cheaper general", pools["web"])
	}
}
