package nodeclass_test

import (
	"fmt"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// ExampleHash shows which edits drift nodes: changing tags changes the
// hash, re-ordering selector terms does not.
func ExampleHash() {
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms:    []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}, {ID: "subnet-2"}},
		Role:                "KarpenterNodeRole-demo",
	}}
	before := nodeclass.Hash(nc)
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-2"}, {ID: "subnet-1"}}
	fmt.Println(nodeclass.Hash(nc) == before)
	nc.Spec.Tags = map[string]string{"team": "b"}
	fmt.Println(nodeclass.Hash(nc) == before)
	// Output:
	// true
	// false
}
