package counter_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/counter"
)

func ExampleCountNodeClaims() {
	launched := func(name, price string) karpv1.NodeClaim {
		nc := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{nodeclaimutil.PriceAnnotationKey: price}}}
		nc.Status.ProviderID = "aws:///us-east-1a/i-" + name
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
		return nc
	}
	a, b := launched("a", "0.096"), launched("b", "0.0288")
	count := counter.CountNodeClaims([]*karpv1.NodeClaim{&a, &b}, nil)
	cpu, mem := count.Resources[corev1.ResourceCPU], count.Resources[corev1.ResourceMemory]
	fmt.Printf("nodes=%d cpu=%s memory=%s cost=$%.4f/h\n", count.Nodes, cpu.String(), mem.String(), count.CostPerHour)
	// Output: nodes=2 cpu=4 memory=16Gi cost=$0.1248/h
}
