package catalog_test

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// m5.large in us-east-1 with default kubelet settings: its labels, capacity,
// allocatable and offerings in the emulator's default zones.
func ExampleCatalog_InstanceTypes() {
	c := catalog.Builtin()
	var zones []string
	for _, z := range c.DefaultZones("us-east-1") {
		zones = append(zones, z.Name)
	}
	for _, it := range c.InstanceTypes("us-east-1", zones, catalog.KubeletSettings{}) {
		if it.Name != "m5.large" {
			continue
		}
		for _, k := range []string{
			catalog.LabelArch, catalog.LabelInstanceFamily, catalog.LabelInstanceCPU, catalog.LabelInstanceMemory,
			catalog.LabelInstanceNetworkBandwidth, catalog.LabelInstanceHypervisor,
		} {
			fmt.Printf("%s=%s\n", k, it.Labels[k])
		}
		printResources("capacity", it.Capacity)
		printResources("allocatable", it.Allocatable())
		for _, o := range it.Offerings {
			fmt.Printf("%s %s %-9s $%.4f\n", o.Zone, o.ZoneID, o.CapacityType, o.Price)
		}
	}
	// Output:
	// kubernetes.io/arch=amd64
	// karpenter.k8s.aws/instance-family=m5
	// karpenter.k8s.aws/instance-cpu=2
	// karpenter.k8s.aws/instance-memory=8192
	// karpenter.k8s.aws/instance-network-bandwidth=750
	// karpenter.k8s.aws/instance-hypervisor=nitro
	// capacity: cpu=2 ephemeral-storage=20Gi memory=7577Mi pods=29 vpc.amazonaws.com/pod-eni=9
	// allocatable: cpu=1930m ephemeral-storage=17Gi memory=6903Mi pods=29 vpc.amazonaws.com/pod-eni=9
	// us-east-1a use1-az2 on-demand $0.0960
	// us-east-1a use1-az2 spot      $0.0212
	// us-east-1b use1-az4 on-demand $0.0960
	// us-east-1b use1-az4 spot      $0.0247
	// us-east-1c use1-az6 on-demand $0.0960
	// us-east-1c use1-az6 spot      $0.0241
}

// The spot rule gives every zone its own, stable price below on-demand.
func ExampleSpotPrice() {
	c := catalog.Builtin()
	od, _ := c.OnDemandPrice("us-east-1", "m7g.large")
	fmt.Printf("on-demand $%.4f\n", od)
	for _, z := range c.Zones("us-east-1") {
		fmt.Printf("%s spot $%.4f\n", z.Name, catalog.SpotPrice("us-east-1", z.Name, "m7g.large", od))
	}
	// Output:
	// on-demand $0.0816
	// us-east-1a spot $0.0255
	// us-east-1b spot $0.0274
	// us-east-1c spot $0.0260
	// us-east-1d spot $0.0257
	// us-east-1e spot $0.0278
	// us-east-1f spot $0.0269
}

// Bad kubelet settings are reported with the field they came from.
func ExampleKubeletSettings_Validate() {
	s := catalog.KubeletSettings{
		KubeReserved: map[string]string{"memory": "lots"},
		EvictionHard: map[string]string{"memory.available": "120%"},
	}
	for _, err := range s.Validate() {
		fmt.Println(err)
	}
	// Output:
	// spec.kubelet.kubeReserved[memory]: Invalid value: "lots": not a Kubernetes quantity (such as 500m, 100Mi or 1Gi)
	// spec.kubelet.evictionHard[memory.available]: Invalid value: "120%": percentage must be a number from 0 to 100
}

func printResources(title string, l corev1.ResourceList) {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	slices.Sort(names)
	fmt.Printf("%s:", title)
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		fmt.Printf(" %s=%s", n, q.String())
	}
	fmt.Println()
}
