package provisioning_test

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// ExampleNewNodeClaim shows the NodeClaim made from one planned node: the
// template's labels and taints, the plan's narrowed requirements, and the
// NodePool, EC2NodeClass and template labels as requirements (the peer
// writes karpenter.k8s.aws/ec2nodeclass on its NodeClaims too).
func ExampleNewNodeClaim() {
	np := controllerstest.NodePool("team-b")
	np.Spec.Template.Labels = map[string]string{"team": "b"}
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: "b", Effect: corev1.TaintEffectNoSchedule}}

	planned := &engine.NewNodeClaim{
		Name:     "team-b-1",
		NodePool: "team-b",
		Requirements: requirements.NewRequirements(
			requirements.MustNew(corev1.LabelArchStable, requirements.Operator(corev1.NodeSelectorOpIn), []string{"amd64"}, nil),
			requirements.MustNew(karpv1.CapacityTypeLabelKey, requirements.Operator(corev1.NodeSelectorOpIn), []string{"on-demand"}, nil),
			requirements.MustNew(corev1.LabelInstanceTypeStable, requirements.Operator(corev1.NodeSelectorOpIn), []string{"m5.large", "c5.xlarge"}, nil),
		),
		// As the engine plans it: the pool's EC2NodeClass is a label.
		Labels:              map[string]string{"team": "b", corev1.LabelHostname: "team-b-1", corev1.LabelArchStable: "amd64", "karpenter.k8s.aws/ec2nodeclass": "default"},
		Taints:              np.Spec.Template.Spec.Taints,
		InstanceTypeOptions: []string{"m5.large", "c5.xlarge"},
		Requests:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
	}
	nc := provisioning.NewNodeClaim(np, planned, controllerstest.InstanceTypes(), provisioning.ReasonProvisioning, 0)

	fmt.Println("generateName:", nc.GenerateName)
	keys := make([]string, 0, len(nc.Labels))
	for k := range nc.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("label %s=%s\n", k, nc.Labels[k])
	}
	for _, r := range nc.Spec.Requirements {
		fmt.Println("requirement", r.Key, r.Operator, r.Values)
	}
	fmt.Println("taints:", nc.Spec.Taints[0].ToString())
	cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]
	fmt.Println("requests cpu:", cpu.String())
	// Output:
	// generateName: team-b-
	// label karpenter.k8s.aws/ec2nodeclass=default
	// label karpenter.sh/nodepool=team-b
	// label kubernetes.io/arch=amd64
	// label team=b
	// requirement karpenter.sh/capacity-type In [on-demand]
	// requirement kubernetes.io/arch In [amd64]
	// requirement node.kubernetes.io/instance-type In [m5.large c5.xlarge]
	// requirement karpenter.k8s.aws/ec2nodeclass In [default]
	// requirement karpenter.sh/nodepool In [team-b]
	// requirement team In [b]
	// taints: team=b:NoSchedule
	// requests cpu: 1500m
}
