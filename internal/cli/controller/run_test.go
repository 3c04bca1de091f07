package controller_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/controller"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	"github.com/dovetail-sh/dovetail/pkg/operator"
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

// TestRunManagesNodeClaimsUntilCancelled runs the command's Run with the
// kubeconfig of the test cluster and the fake cloud: it launches a
// NodeClaim, and returns cleanly when its context ends (SIGTERM).
func TestRunManagesNodeClaimsUntilCancelled(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan error, 1)
	cmd := controller.NewCmdController(func(_ context.Context, o *controller.Options) error {
		o.Cloud = func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
			return operator.Cloud{Provider: env.Cloud}, nil
		}
		return controller.Run(ctx, o)
	})
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "--cluster-name", "test", "--metrics-port", "0",
		"--health-probe-port", "0", "--bind-address", "127.0.0.1", "--leader-election-name", env.Prefix})
	go func() { done <- cmd.Execute() }()

	nc := controllerstest.NodeClaim("cli", "team-a")
	env.Create(nc)
	env.Eventually("the command's controller to launch the NodeClaim", func() (bool, error) {
		err := env.Get(nc)
		return nc.IsTrue(karpv1.ConditionTypeLaunched), err
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("controller exited with %v", err)
		}
	case <-time.After(controllerstest.Timeout):
		t.Fatal("controller did not stop")
	}
	if !strings.Contains(stderr.String(), `"msg":"starting"`) {
		t.Errorf("no start line in the JSON log:\n%s", stderr.String())
	}
}
