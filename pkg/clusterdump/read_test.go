package clusterdump_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/clusterdump"
)

// TestReadWithoutKarpenterCRDs: on a cluster that does not serve NodePools,
// EC2NodeClasses and NodeClaims, Read names them as missing and still
// reads the nodes and pods, page by page; a cancelled context stops it.
func TestReadWithoutKarpenterCRDs(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.RESTConfig(), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cas-" + string(rune('a'+i)), Labels: map[string]string{
			corev1.LabelInstanceTypeStable: "m5.large", "eks.amazonaws.com/capacityType": "SPOT"}}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	var progress bytes.Buffer
	d, err := clusterdump.Read(ctx, c, clusterdump.Options{PageSize: 2, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Missing, []string{"NodePools", "EC2NodeClasses", "NodeClaims", "NodeOverlays"}) {
		t.Errorf("missing %v; want the four Karpenter kinds", d.Missing)
	}
	if len(d.Nodes) != 3 || d.Nodes[0].Labels["eks.amazonaws.com/capacityType"] != "SPOT" {
		t.Errorf("nodes %d, %v", len(d.Nodes), d.Nodes)
	}
	for _, want := range []string{"NodePools: not served by this cluster", "Nodes: 2 read...", "Nodes: 3"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := clusterdump.Read(cctx, c, clusterdump.Options{}); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Read with a cancelled context: %v", err)
	}
}
