package charts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dovetail-sh/dovetail/api/crds"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

const (
	release   = "dovetail"
	namespace = "kube-system"
	// leaseName is not the default, so the test shows the Role following
	// the lease the chart tells the controller to use.
	leaseName = "dovetail-chart-lease"
)

// helmInstall is a local-stack component that installs both charts after
// the AWS emulator and before the controller, and hands the controller the
// Deployment's own arguments and environment.
type helmInstall struct {
	t    *testing.T
	ctrl *ctrlproc.Component
	// kubeconfig is the admin kubeconfig helm uses.
	kubeconfig string
	adoptErr   string // what helm said before the CRDs were adopted
}

func (h *helmInstall) Name() string { return "helm" }

func (h *helmInstall) helm(args ...string) (string, error) {
	return runHelm(h.t, append(args, "--kubeconfig", h.kubeconfig)...)
}

func (h *helmInstall) Start(ctx context.Context, env stack.Env) error {
	h.kubeconfig = env.ControlPlane.KubeconfigPath()
	kubectl := func(args ...string) (string, error) {
		out, err := env.ControlPlane.Kubectl(ctx, args...).CombinedOutput()
		return string(out), err
	}
	// The stack installed the CRDs already, as a peer install would have:
	// the CRD chart refuses them until they carry Helm's ownership
	// metadata (docs/install.md), then adopts them.
	objs, err := crds.Objects()
	if err != nil {
		return err
	}
	var crds []string
	for _, o := range objs {
		crds = append(crds, "crd/"+o.Name)
	}
	out, err := h.helm("install", "dovetail-crd", "./dovetail-crd", "-n", namespace)
	if err == nil {
		return fmt.Errorf("helm install dovetail-crd over unowned CRDs succeeded:\n%s", out)
	}
	h.adoptErr = out
	if out, err := kubectl(append([]string{"label", "--overwrite"}, append(crds, "app.kubernetes.io/managed-by=Helm")...)...); err != nil {
		return fmt.Errorf("labelling the CRDs: %v\n%s", err, out)
	}
	if out, err := kubectl(append([]string{"annotate", "--overwrite"}, append(crds, "meta.helm.sh/release-name=dovetail-crd", "meta.helm.sh/release-namespace="+namespace)...)...); err != nil {
		return fmt.Errorf("annotating the CRDs: %v\n%s", err, out)
	}
	if out, err := h.helm("install", "dovetail-crd", "./dovetail-crd", "-n", namespace); err != nil {
		return fmt.Errorf("helm install dovetail-crd: %v\n%s", err, out)
	}
	aws, err := localaws.ReadEnv(env.Dir)
	if err != nil {
		return err
	}
	if out, err := h.helm("install", release, "./dovetail", "-n", namespace,
		"--set", "settings.clusterName="+env.ClusterName,
		"--set", "settings.interruptionQueue="+aws[localaws.VarInterruptionQueue],
		"--set", "settings.batchIdleDuration=200ms",
		"--set", "leaderElection.name="+leaseName); err != nil {
		return fmt.Errorf("helm install dovetail: %v\n%s", err, out)
	}
	// Every object of the release exists in the API server.
	manifest, stderr, err := runHelmSplit(h.t, "get", "manifest", release, "-n", namespace, "--kubeconfig", h.kubeconfig)
	if err != nil {
		return fmt.Errorf("helm get manifest: %v\n%s", err, stderr)
	}
	get := env.ControlPlane.Kubectl(ctx, "get", "-f", "-", "-o", "name")
	get.Stdin = strings.NewReader(manifest)
	names, err := get.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the release's objects are not all in the cluster: %v\n%s", err, names)
	}
	if n := len(strings.Fields(string(names))); n < 8 {
		return fmt.Errorf("the release created %d objects, want at least 8:\n%s", n, names)
	}

	// The controller runs with the Deployment's arguments and environment
	// (its ports and kubeconfig are the local stack's).
	raw, err := kubectl("get", "deployment", release, "-n", namespace, "-o", "json")
	if err != nil {
		return fmt.Errorf("%v\n%s", err, raw)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					ServiceAccountName string `json:"serviceAccountName"`
					Containers         []struct {
						Args []string `json:"args"`
						Env  []struct{ Name, Value string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return err
	}
	c := d.Spec.Template.Spec.Containers[0]
	h.ctrl.Args = c.Args[1:] // after "controller"
	h.ctrl.Env = map[string]string{}
	for _, e := range c.Env {
		if e.Value != "" && e.Name != "METRICS_PORT" && e.Name != "HEALTH_PROBE_PORT" {
			h.ctrl.Env[e.Name] = e.Value
		}
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	h.ctrl.Kubeconfig = func(ctx context.Context, env stack.Env) (string, error) {
		return tokenKubeconfig(ctx, env, sa)
	}
	return nil
}

func (h *helmInstall) Stop(context.Context) error { return nil }

// tokenKubeconfig asks the API server for a token of the chart's
// ServiceAccount (TokenRequest) and writes a kubeconfig that uses it.
func tokenKubeconfig(ctx context.Context, env stack.Env, sa string) (string, error) {
	out, err := env.ControlPlane.Kubectl(ctx, "create", "token", sa, "-n", namespace, "--duration", "1h").Output()
	if err != nil {
		return "", fmt.Errorf("kubectl create token %s: %w", sa, err)
	}
	cfg, err := clientcmd.LoadFromFile(env.ControlPlane.KubeconfigPath())
	if err != nil {
		return "", err
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{sa: {Token: strings.TrimSpace(string(out))}}
	for _, c := range cfg.Contexts {
		c.AuthInfo = sa
	}
	path := filepath.Join(env.Dir, "chart-serviceaccount.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// TestInstallOnTheLocalStack installs both charts into the real API
// server, runs the controller with the chart's ServiceAccount token, RBAC,
// arguments and environment, provisions a workload, then upgrades and
// uninstalls the release.
func TestInstallOnTheLocalStack(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "dovetail")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/dovetail").CombinedOutput(); err != nil {
		t.Fatalf("building dovetail: %v\n%s", err, out)
	}
	helm(t) // build helm before the stack's clock starts
	aws := localaws.New()
	aws.TimeScale = 0.05
	ctrl := &ctrlproc.Component{Binary: binary, TimeScale: func() float64 { return aws.TimeScale }}
	h := &helmInstall{t: t, ctrl: ctrl}
	s, err := stack.Up(t.Context(), stack.Options{Dir: filepath.Join(dir, "stack"), Components: []stack.Component{aws, h, ctrl}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cp := s.ControlPlane()
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := cp.Kubectl(t.Context(), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if !strings.Contains(h.adoptErr, "meta.helm.sh/release-name") {
		t.Errorf("helm's refusal of unowned CRDs does not name the annotation docs/install.md adds:\n%s", h.adoptErr)
	}

	t.Run("the controller holds the chart's lease as the chart's ServiceAccount", func(t *testing.T) {
		poll.Until(t, time.Minute, 200*time.Millisecond, "the lease to be held", func() (bool, error) {
			out, err := cp.Kubectl(t.Context(), "get", "lease", leaseName, "-n", namespace, "-o", "jsonpath={.spec.holderIdentity}").Output()
			return err == nil && len(out) > 0, err
		})
		env := ctrl.Replica(0)
		log, _ := os.ReadFile(env.LogPath)
		if strings.Contains(strings.ToLower(string(log)), "forbidden") {
			t.Errorf("the controller hit a forbidden request:\n%s", log)
		}
	})

	t.Run("provisions a workload", func(t *testing.T) {
		kubectl("apply", "-f", "../examples/ec2nodeclass.yaml", "-f", "testdata/nodepool.yaml", "-f", "testdata/workload.yaml")
		poll.Until(t, 3*time.Minute, 500*time.Millisecond, "the workload's 2 pods to run on dovetail's nodes", func() (bool, error) {
			out, err := cp.Kubectl(t.Context(), "get", "pods", "-n", "default", "-l", "app=web",
				"-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}").Output()
			return strings.Count(string(out), "Running") == 2, err
		})
		nodes := kubectl("get", "nodes", "-l", "karpenter.sh/nodepool=default", "-o", "name")
		if len(strings.Fields(nodes)) == 0 {
			t.Error("no node of the NodePool")
		}
		// The chart's own pods never land on the nodes dovetail manages.
		out := kubectl("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance="+release, "-o", "jsonpath={range .items[*]}{.status.phase}/{.spec.nodeName}{\"\\n\"}{end}")
		if lines := strings.Fields(out); len(lines) != 2 || lines[0] != "Pending/" || lines[1] != "Pending/" {
			t.Errorf("the chart's pods are %q, want 2 Pending and unscheduled", out)
		}
	})

	t.Run("upgrade to a changed value", func(t *testing.T) {
		if out, err := h.helm("upgrade", release, "./dovetail", "-n", namespace, "--reuse-values", "--set", "settings.batchIdleDuration=2s"); err != nil {
			t.Fatalf("helm upgrade: %v\n%s", err, out)
		}
		env := kubectl("get", "deployment", release, "-n", namespace, "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="BATCH_IDLE_DURATION")].value}`)
		if env != "2s" {
			t.Errorf("BATCH_IDLE_DURATION is %q after the upgrade, want 2s", env)
		}
	})

	t.Run("uninstall", func(t *testing.T) {
		if out, err := h.helm("uninstall", release, "-n", namespace, "--wait"); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		for _, o := range []string{"deployment/" + release, "serviceaccount/" + release, "role/" + release, "service/" + release} {
			if out, err := cp.Kubectl(t.Context(), "get", o, "-n", namespace, "--ignore-not-found", "-o", "name").Output(); err != nil || len(out) > 0 {
				t.Errorf("%s is left after uninstall (%v)", o, err)
			}
		}
		if out, _ := cp.Kubectl(t.Context(), "get", "clusterrole/"+release, "--ignore-not-found", "-o", "name").Output(); len(out) > 0 {
			t.Error("the ClusterRole is left after uninstall")
		}
		// The CRDs belong to the other release and stay.
		kubectl("get", "crd", "nodepools.karpenter.sh")
	})
}
