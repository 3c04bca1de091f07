package hash_test

import (
	"fmt"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/hash"
)

func ExampleHash() {
	a, b := pool(), pool()
	b.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("43200m")
	fmt.Println("720h and 43200m hash alike:", hash.Hash(a) == hash.Hash(b))
	fmt.Println(hash.Annotations(a)[karpv1.NodePoolHashVersionAnnotationKey])
	// Output:
	// 720h and 43200m hash alike: true
	// v3
}
