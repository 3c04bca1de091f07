package engine_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// A spot pool (weight 20) and an on-demand fallback (weight 10). Three web
// replicas spread over zones land on spot; a pod that asks for on-demand
// gets the fallback pool; a pod asking for a label no pool provides is
// reported with the key.
func Example() {
	types := []*cloudprovider.InstanceType{exampleType("m.large", 2, 8, 0.10), exampleType("m.xlarge", 4, 16, 0.20)}
	spot := engine.NodePool{Name: "spot", Weight: 20, InstanceTypes: types,
		Requirements: requirements.NewRequirements(requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"spot"}, nil))}
	onDemand := engine.NodePool{Name: "on-demand", Weight: 10, InstanceTypes: types}

	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	var pods []*corev1.Pod
	for i := range 3 {
		p := examplePod(fmt.Sprintf("web-%d", i), "1")
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web,
		}}
		pods = append(pods, p)
	}
	batch := examplePod("batch", "3")
	batch.Spec.NodeSelector = map[string]string{"karpenter.sh/capacity-type": "on-demand"}
	gpu := examplePod("trainer", "1")
	gpu.Spec.NodeSelector = map[string]string{"example.com/gpu": "h100"}
	pods = append(pods, batch, gpu)

	plan, err := engine.Solve(&engine.Input{Pods: pods, NodePools: []engine.NodePool{spot, onDemand}})
	if err != nil {
		panic(err)
	}
	for _, c := range plan.NodeClaims {
		fmt.Printf("%s %s %s %s $%.3f %v\n", c.Name, c.Offering.InstanceType, c.Offering.Zone, c.Offering.CapacityType, c.Offering.Price, c.Pods)
	}
	for _, u := range plan.Unschedulable {
		fmt.Printf("%s: %s\n", u.Pod, u.Code)
	}
	fmt.Printf("$%.3f/h\n", plan.PricePerHour)
	// Output:
	// spot-1 m.large zone-a spot $0.040 [default/web-0]
	// spot-2 m.large zone-b spot $0.040 [default/web-1]
	// spot-3 m.large zone-c spot $0.040 [default/web-2]
	// on-demand-1 m.xlarge zone-a on-demand $0.200 [default/batch]
	// default/trainer: NoCompatibleNodePool
	// $0.320/h
}

func exampleType(name string, cpu, gib int64, price float64) *cloudprovider.InstanceType {
	it := &cloudprovider.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(gib<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(20, resource.DecimalSI),
		},
	}
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		it.Offerings = append(it.Offerings,
			cloudprovider.Offering{Zone: z, CapacityType: "on-demand", Price: price, Available: true},
			cloudprovider.Offering{Zone: z, CapacityType: "spot", Price: price * 0.4, Available: true})
	}
	return it
}

func examplePod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
	}
}
