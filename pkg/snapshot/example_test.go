package snapshot_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// ExampleBuild converts a NodePool, its EC2NodeClass and a pending pod into
// an engine input over the built-in catalog.
func ExampleBuild() {
	maxPods := int32(20)
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: &maxPods}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"m5.large"}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	pod.Spec.Containers = []corev1.Container{{Name: "web", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}

	src := snapshot.NewCatalogSource(catalog.Builtin(), "us-east-1", []string{"us-east-1a"})
	in, err := snapshot.Build(&snapshot.Cluster{
		NodePools: []*karpv1.NodePool{np}, NodeClasses: []*awsv1.EC2NodeClass{nc}, Pods: []*corev1.Pod{pod},
	}, src, snapshot.Options{Region: "us-east-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool := in.NodePools[0]
	for _, it := range pool.InstanceTypes {
		if it.Name == "m5.large" {
			pods := it.Capacity[corev1.ResourcePods]
			fmt.Printf("pool %s: m5.large holds %s pods, %d offerings in us-east-1a\n", pool.Name, pods.String(), len(it.Offerings))
		}
	}
	fmt.Println("pending:", len(in.Pods))
	// Output:
	// pool general: m5.large holds 20 pods, 2 offerings in us-east-1a
	// pending: 1
}
