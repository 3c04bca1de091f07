package aws_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// ExamplePlanLaunch plans a launch of a 2-CPU arm64 node that may be spot
// or on-demand, from the built-in catalog's us-east-1 types.
func ExamplePlanLaunch() {
	types := catalog.Builtin().InstanceTypes("us-east-1", []string{"us-east-1a", "us-east-1b"}, catalog.KubeletSettings{})
	reqs := requirements.NewRequirements(
		requirements.MustNew("kubernetes.io/arch", requirements.In, []string{"arm64"}, nil),
		requirements.MustNew("karpenter.sh/capacity-type", requirements.In, []string{"spot", "on-demand"}, nil),
		requirements.MustNew("karpenter.k8s.aws/instance-family", requirements.In, []string{"m7g", "c7g"}, nil),
	)
	plan, err := awsprovider.PlanLaunch(types, reqs, nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, "us-east-1", 3)
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.CapacityType, len(plan.Types), plan.Types[0].MinPrice <= plan.Types[1].MinPrice)
	// Output: spot 3 true
}
