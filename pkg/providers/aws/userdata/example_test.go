package userdata_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/userdata"
)

// ExampleRender renders AL2023 user data for a node of the "default"
// NodePool and reads back what its kubelet registers with.
func ExampleRender() {
	data, err := userdata.Render(userdata.Input{
		Family:          awsv1.AMIFamilyAL2023,
		ClusterName:     "demo",
		ClusterEndpoint: "https://demo.example",
		ClusterCA:       "Q0E=",
		ServiceCIDR:     "10.100.0.0/16",
		Labels:          map[string]string{"karpenter.sh/nodepool": "default"},
		Taints:          []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}},
	})
	if err != nil {
		panic(err)
	}
	node, err := userdata.Parse(awsv1.AMIFamilyAL2023, data)
	if err != nil {
		panic(err)
	}
	fmt.Println(node.ClusterName, node.Labels, node.Taints[0].ToString())
	// Output: demo map[karpenter.sh/nodepool:default] karpenter.sh/unregistered:NoExecute
}
