package nodepoolhash_test

import (
	"fmt"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
)

func ExampleHash() {
	a, b := pool(), pool()
	b.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("43200m")
	fmt.Println("720h and 43200m hash alike:", nodepoolhash.Hash(a) == nodepoolhash.Hash(b))
	fmt.Println(nodepoolhash.Annotations(a)[karpv1.NodePoolHashVersionAnnotationKey])
	// Output:
	// 720h and 43200m hash alike: true
	// v3
}
