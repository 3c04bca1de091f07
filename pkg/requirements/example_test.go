package requirements_test

import (
	"errors"
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

func ptr(i int) *int { return &i }

// A NodePool allows two architectures and at least three instance families;
// a pod asks for arm64 and excludes one zone. The intersection is what a
// node launched for the pod must satisfy.
func Example() {
	pool := requirements.NewRequirements(
		requirements.MustNew("kubernetes.io/arch", requirements.In, []string{"arm64", "amd64"}, nil),
		requirements.MustNew("karpenter.k8s.aws/instance-family", requirements.Exists, nil, ptr(3)),
		requirements.MustNew("karpenter.k8s.aws/instance-cpu", requirements.Gt, []string{"3"}, nil),
	)
	pod := requirements.NewRequirements(
		requirements.MustNew("kubernetes.io/arch", requirements.In, []string{"arm64"}, nil),
		requirements.MustNew("topology.kubernetes.io/zone", requirements.NotIn, []string{"us-east-1c"}, nil),
		requirements.MustNew("karpenter.k8s.aws/instance-cpu", requirements.Lte, []string{"16"}, nil),
	)
	fmt.Println("compatible:", pool.Compatible(pod))
	node := pool.Intersection(pod)
	fmt.Println(node)
	fmt.Println("labels:", node.Labels())

	err := pool.Compatible(requirements.NewRequirements(
		requirements.MustNew("kubernetes.io/arch", requirements.In, []string{"s390x"}, nil)))
	var inc *requirements.IncompatibleError
	fmt.Println(errors.As(err, &inc), inc.Key, inc.Reason)
	fmt.Println(err)
	// Output:
	// compatible: <nil>
	// karpenter.k8s.aws/instance-cpu Gt 3 Lt 17, karpenter.k8s.aws/instance-family Exists minValues 3, kubernetes.io/arch In [arm64], topology.kubernetes.io/zone NotIn [us-east-1c]
	// labels: map[kubernetes.io/arch:arm64]
	// true kubernetes.io/arch Disjoint
	// key "kubernetes.io/arch": "s390x" not in [amd64 arm64]
}

// A pod requirement on a key the NodePool does not define fails unless the
// key is open; the error suggests the key the author probably meant.
func ExampleRequirements_CompatibleWith() {
	pool := requirements.NewRequirements(
		requirements.MustNew("kubernetes.io/arch", requirements.In, []string{"amd64"}, nil))
	pod := requirements.NewRequirements(
		requirements.MustNew("topology.kubernetes.io/zon", requirements.In, []string{"us-east-1a"}, nil))

	fmt.Println(pool.Compatible(pod))
	fmt.Println(pool.CompatibleWith(pod, requirements.CompatibleOptions{
		OpenKeys: func(key string) bool { return key == "topology.kubernetes.io/zon" },
	}))
	// Output:
	// key "topology.kubernetes.io/zon" (typo of "topology.kubernetes.io/zone"?): incoming In [us-east-1a] needs the label, but the node side does not define the key
	// <nil>
}

func ExampleNew_error() {
	_, err := requirements.New("karpenter.k8s.aws/instance-cpu", requirements.Gt, []string{"four"}, nil)
	var rerr *requirements.Error
	fmt.Println(errors.As(err, &rerr), rerr.Field, errors.Is(err, requirements.ErrInvalidValues))
	fmt.Println(err)
	// Output:
	// true values[0] true
	// requirement "karpenter.k8s.aws/instance-cpu": values[0]: operator Gt needs an integer value, got "four"
}

func ExampleRequirements_MinValuesSatisfiedBy() {
	pool := requirements.NewRequirements(
		requirements.MustNew("karpenter.k8s.aws/instance-family", requirements.In, []string{"m7g", "c7g", "r7g"}, ptr(2)))
	remaining := []requirements.Requirements{
		requirements.FromLabels(map[string]string{"karpenter.k8s.aws/instance-family": "m7g"}),
		requirements.FromLabels(map[string]string{"karpenter.k8s.aws/instance-family": "m6i"}),
	}
	fmt.Println(pool.MinValuesSatisfiedBy(remaining))
	// Output:
	// key "karpenter.k8s.aws/instance-family": minValues 2 not met, only 1 distinct value(s) remain
}
