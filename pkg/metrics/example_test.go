package metrics_test

import (
	"context"
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

func ExampleDecorate() {
	reg := metrics.NewRegistry()
	cloud := metrics.Decorate(smallCloud(), reg, "nodeclaim.lifecycle", clock.RealClock{})

	nc, _ := cloud.Create(context.Background(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	fmt.Println("launched:", nc.Labels["node.kubernetes.io/instance-type"])
	calls, _ := metricstest.Read(reg.CloudProviderCalls.WithLabelValues("nodeclaim.lifecycle", "Create", "fake", "success"))
	fmt.Println("Create calls:", calls)
	// Output:
	// launched: m5.large
	// Create calls: 1
}
