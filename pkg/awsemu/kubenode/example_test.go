package kubenode_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/kubenode"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// ExampleNodeFor shows the Node a Bottlerocket instance registers.
func ExampleNodeFor() {
	in := awsemu.Instance{
		ID: "i-0123456789abcdef0", InstanceType: "m7g.large", Zone: "us-east-1a",
		PrivateIP: "10.0.0.9", PrivateDNSName: "ip-10-0-0-9.ec2.internal",
		UserData: "[settings.kubernetes]\nmax-pods = 20\n" +
			"[settings.kubernetes.node-labels]\n'karpenter.sh/nodepool' = 'default'\n" +
			"[settings.kubernetes.node-taints]\n'karpenter.sh/unregistered' = [':NoExecute']\n",
	}
	node, err := kubenode.NodeFor(in, "us-east-1", "1.37", catalog.Builtin())
	if err != nil {
		panic(err)
	}
	fmt.Println(node.Name, node.Spec.ProviderID)
	fmt.Println(node.Labels["karpenter.sh/nodepool"], node.Labels["kubernetes.io/arch"], node.Spec.Taints[0].ToString())
	fmt.Println("pods", node.Status.Capacity.Pods(), "cpu", node.Status.Capacity.Cpu())
	// Output:
	// ip-10-0-0-9.ec2.internal aws:///us-east-1a/i-0123456789abcdef0
	// default arm64 karpenter.sh/unregistered:NoExecute
	// pods 20 cpu 2
}
