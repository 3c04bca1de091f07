package top_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/top"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTopOnTheRealControlPlane: a dovetail node (recorded price), a node of
// another autoscaler (catalog price, EKS capacity-type label), a launching
// NodeClaim and pods; --plain prints each with its pool, type, price and
// cpu bar; the screen mode redraws until its context ends.
func TestTopOnTheRealControlPlane(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ns := env.Namespace()
	ctx := context.Background()
	mkNode := func(name string, labels map[string]string, cpu string) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		env.Create(n)
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")}
		n.Status.Capacity = n.Status.Allocatable
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	mkNode("dt-node", map[string]string{karpv1.NodePoolLabelKey: "web", corev1.LabelInstanceTypeStable: "c6g.large", karpv1.CapacityTypeLabelKey: "spot", corev1.LabelTopologyZone: "us-east-1b"}, "2")
	mkNode("cas-node", map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", "eks.amazonaws.com/capacityType": "ON_DEMAND", corev1.LabelTopologyZone: "us-east-1a"}, "4")
	for name, node := range map[string]string{"dt-claim": "dt-node", "new-claim": ""} {
		nc := controllerstest.NodeClaim(name, "web")
		nc.Annotations = map[string]string{karpv1.AnnotationPricePerHour: "0.0312"}
		env.Create(nc)
		if node != "" {
			nc.Status.NodeName = node
			if err := env.Client.Status().Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, node := range []string{"dt-node", "cas-node", "cas-node"} {
		p := controllerstest.Pod(ns, "p"+string(rune('a'+i)), node)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		env.Create(p)
	}

	var out lockedBuffer
	cmd := top.NewCmd(nil)
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "--plain"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Logf("$ dovetail top --plain\n%s", text)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^dt-node\s+web\s+c6g\.large\s+spot\s+us-east-1b\s+0\.0312\s+\[#####     \]  50%`),
		regexp.MustCompile(`(?m)^cas-node\s+\(unmanaged\)\s+m5\.xlarge\s+on-demand\s+us-east-1a\s+0\.1920\*\s+\[#####     \]  50%`),
		regexp.MustCompile(`(?m)^new-claim \(launching\)\s+web\s`),
		regexp.MustCompile(`nodes 2 \(\+1 launching, 1 spot\)  pods 3  \$0\.2544/h`),
	} {
		if !want.MatchString(text) {
			t.Errorf("the plain view lacks %s", want)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("the plain view has escape sequences")
	}

	// Screen mode: redraws on each tick of the clock, stops on cancel.
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	var screen lockedBuffer
	yes := true
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- top.Run(cctx, &top.Options{Kubeconfig: cp.KubeconfigPath(), Interval: 2 * time.Second, Stdout: &screen, Stderr: &bytes.Buffer{}, Clock: clk, TTY: &yes, Width: 200})
	}()
	frames := func() int { return strings.Count(screen.String(), "\x1b[H\x1b[2J") }
	poll.Until(t, 30*time.Second, 20*time.Millisecond, "the first frame", func() (bool, error) { return frames() >= 1 && clk.HasWaiters(), nil })
	clk.Step(2 * time.Second)
	poll.Until(t, 30*time.Second, 20*time.Millisecond, "the second frame", func() (bool, error) { return frames() >= 2, nil })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("top ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("top did not stop on cancel")
	}
	if !strings.Contains(screen.String(), "10:00:02") {
		t.Errorf("the second frame lacks the clock's time:\n%s", screen.String())
	}
}
