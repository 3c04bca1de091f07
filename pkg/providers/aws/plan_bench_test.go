package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

func BenchmarkPlanLaunch(b *testing.B) {
	types := catalog.Builtin().InstanceTypes("us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c"}, catalog.KubeletSettings{})
	reqs := requirements.NewRequirements(requirements.MustNew("kubernetes.io/arch", requirements.In, []string{"amd64"}, nil))
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PlanLaunch(types, reqs, nil, requests, "us-east-1", 60); err != nil {
			b.Fatal(err)
		}
	}
}
