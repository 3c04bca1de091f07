package workload_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// The reference workload with the peer's seed: five equal kinds of pods.
func ExampleReference() {
	in := workload.Reference(1000, workload.ReferenceSeed)
	kinds := map[string]int{}
	for _, p := range in.Pods {
		switch {
		case len(p.Spec.TopologySpreadConstraints) > 0:
			kinds["spread ("+p.Spec.TopologySpreadConstraints[0].TopologyKey+")"]++
		case p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil:
			kinds["zone affinity"]++
		case p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil:
			kinds["hostname anti-affinity"]++
		default:
			kinds["generic"]++
		}
	}
	fmt.Println(len(in.NodePools[0].InstanceTypes), "types")
	for _, k := range []string{"generic", "spread (topology.kubernetes.io/zone)", "spread (kubernetes.io/hostname)", "zone affinity", "hostname anti-affinity"} {
		fmt.Println(k, kinds[k])
	}
	// Output:
	// 400 types
	// generic 200
	// spread (topology.kubernetes.io/zone) 200
	// spread (kubernetes.io/hostname) 200
	// zone affinity 200
	// hostname anti-affinity 200
}
