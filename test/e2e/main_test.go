package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// TimeScale of the shared stack's emulator (and of the controller's
// liveness timeouts): instances boot in 0.1-0.2 s and a spot notice lasts
// 12 s.
const TimeScale = 0.1

// The shared stack: one control plane, emulator and controller process for
// the whole package. Tests run one at a time and leave the cluster as they
// found it (see newScenario).
var (
	stk  *stack.Stack
	aws  *localaws.Component
	ctrl *ctrlproc.Component
	kube client.Client
	// watchClient is kube with Watch, for tests that order events.
	watchClient client.WithWatch
	cs          *kubernetes.Clientset
	binary      string
	repo        string
	workDir     string
)

func emu() *awsemu.Emulator { return aws.Emulator() }

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	repo, err = filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workDir, err = os.MkdirTemp("", "dovetail-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("E2E_KEEP") == "" {
		defer os.RemoveAll(workDir)
	}
	binary = filepath.Join(workDir, "dovetail")
	build := exec.Command("go", "build", "-o", binary, "./cmd/dovetail")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dovetail: %v\n%s", err, out)
		return 1
	}

	ctrllog.SetLogger(logr.Discard())
	aws = localaws.New()
	aws.TimeScale = TimeScale
	aws.Seed = 7
	ctrl = &ctrlproc.Component{
		Binary: binary, RBAC: rbac.Manifests(),
		TimeScale: func() float64 { return aws.TimeScale },
	}
	var progress bytes.Buffer
	stk, err = stack.Up(context.Background(), stack.Options{
		Dir:        filepath.Join(workDir, "stack"),
		Components: []stack.Component{aws, ctrl},
		Apply:      []string{filepath.Join(repo, "examples")},
		Progress:   &progress,
		// DOVETAIL_E2E_AUDIT=1: the API server logs the controller's
		// requests, which BenchmarkScaleKwok counts on the server side.
		AuditUsers: auditUsers(),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local stack: %v\n%s", err, progress.String())
		return 1
	}
	defer stk.Close()
	cfg := stk.ControlPlane().RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	scheme, err := operator.Scheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kube, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if watchClient, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cs, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := waitExamplesReady(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := holdConsolidation(); err != nil { // see disruption_test.go
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		// The controller's log explains most failures.
		if r := ctrl.Replica(0); r != nil {
			fmt.Fprintf(os.Stderr, "--- controller log (last lines of %s):\n%s\n", r.LogPath, tailFile(r.LogPath, 60))
		}
	}
	return code
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitExamplesReady waits until the example EC2NodeClass is resolved and
// the example NodePools are Ready, so every test starts from there.
func waitExamplesReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		nc := &awsv1.EC2NodeClass{}
		var pools karpv1.NodePoolList
		errNC := kube.Get(ctx, client.ObjectKey{Name: "default"}, nc)
		errNP := kube.List(ctx, &pools)
		ready := errNC == nil && errNP == nil && nc.IsTrue(awsv1.ConditionTypeReady) && len(nc.Status.Subnets) > 0 && len(pools.Items) > 0
		for _, np := range pools.Items {
			ready = ready && np.IsTrue(karpv1.ConditionTypeReady)
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the examples did not become Ready: class %v, pools %v", errNC, errNP)
		case <-tick.C:
		}
	}
}
