package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/local"
)

// recorder is a Component that records when it was started and stopped and
// whether the API server answered at those moments.
type recorder struct {
	name   string
	mu     *sync.Mutex
	events *[]string
	cs     *kubernetes.Clientset
	env    local.Env
}

var _ local.Component = (*recorder)(nil)

func (r *recorder) Name() string { return r.name }

func (r *recorder) record(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.events = append(*r.events, what)
}

func (r *recorder) Start(ctx context.Context, env local.Env) error {
	r.env = env
	cs, err := kubernetes.NewForConfig(env.ControlPlane.RESTConfig())
	if err != nil {
		return err
	}
	r.cs = cs
	_, err = cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	r.record(fmt.Sprintf("start %s (api up: %v)", r.name, err == nil))
	return nil
}

func (r *recorder) Stop(ctx context.Context) error {
	_, err := r.cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	r.record(fmt.Sprintf("stop %s (api up: %v)", r.name, err == nil))
	return nil
}

func TestUpRunsComponentsAndAppliesManifests(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var events []string
	a := &recorder{name: "a", mu: &mu, events: &events}
	b := &recorder{name: "b", mu: &mu, events: &events}
	s, err := local.Up(t.Context(), local.Options{
		Dir:         dir,
		ClusterName: "unit",
		Components:  []local.Component{a, b},
		Apply:       []string{"testdata/manifests"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	t.Run("components see the stack", func(t *testing.T) {
		if a.env.Dir != s.Dir() || a.env.ClusterName != "unit" || a.env.ControlPlane != s.ControlPlane() {
			t.Errorf("env = %+v", a.env)
		}
	})

	t.Run("kubeconfig names the cluster and reaches it", func(t *testing.T) {
		if want := filepath.Join(dir, "kubeconfig"); s.KubeconfigPath() != want {
			t.Errorf("KubeconfigPath() = %s, want %s", s.KubeconfigPath(), want)
		}
		cfg, err := clientcmd.LoadFromFile(s.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.CurrentContext != "unit" || cfg.Contexts["unit"] == nil {
			t.Errorf("current context %q, contexts %v; want unit", cfg.CurrentContext, cfg.Contexts)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(rc)
		cm, err := cs.CoreV1().ConfigMaps("demo").Get(t.Context(), "greeting", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the applied ConfigMap: %v", err)
		}
		if cm.Data["message"] != "hello from the local stack" {
			t.Errorf("ConfigMap data %v", cm.Data)
		}
		// The cluster DNS Service nodes take their DNS address from.
		dns, err := cs.CoreV1().Services("kube-system").Get(t.Context(), "kube-dns", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the kube-dns Service: %v", err)
		}
		if dns.Spec.ClusterIP != local.ClusterDNSIP {
			t.Errorf("kube-dns ClusterIP %s, want %s", dns.Spec.ClusterIP, local.ClusterDNSIP)
		}
	})

	t.Run("a second stack on the same dir is refused", func(t *testing.T) {
		_, err := local.Up(t.Context(), local.Options{Dir: dir})
		var inUse *controlplane.DirInUseError
		if !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
			t.Fatalf("second Up = %v, want a DirInUseError naming pid %d", err, os.Getpid())
		}
	})

	cpDir := s.ControlPlane().Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("components start in order after the control plane and stop in reverse before it", func(t *testing.T) {
		want := []string{"start a (api up: true)", "start b (api up: true)", "stop b (api up: true)", "stop a (api up: true)"}
		if strings.Join(events, "\n") != strings.Join(want, "\n") {
			t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("close leaves nothing running", func(t *testing.T) {
		if left := controlplane.ProcessesUsing(cpDir); len(left) > 0 {
			t.Errorf("processes left: %v", left)
		}
		if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("kubeconfig still present after Close (stat: %v)", err)
		}
		l, err := controlplane.LockDir(dir, filepath.Join(dir, "local.lock"))
		if err != nil {
			t.Fatalf("directory still locked after Close: %v", err)
		}
		l.Unlock()
	})
}

// failing is a Component whose Start fails.
type failing struct{}

func (failing) Name() string                           { return "broken" }
func (failing) Start(context.Context, local.Env) error { return errors.New("no luck") }
func (failing) Stop(context.Context) error             { return errors.New("Stop must not be called") }

func TestValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		opts   local.Options
		fields []string
	}{
		{"defaults are valid", local.Options{}, nil},
		{"manifest file and directory", local.Options{Apply: []string{"testdata/manifests", "testdata/manifests/00-namespace.yaml"}}, nil},
		{"cluster name not a DNS label", local.Options{ClusterName: "Bad_Name"}, []string{"clusterName"}},
		{"missing manifest", local.Options{Apply: []string{"testdata/manifests", "testdata/nope.yaml"}}, []string{"apply[1]"}},
		{"directory without manifests", local.Options{Apply: []string{"testdata"}}, []string{"apply[0]"}},
		{"dir is a file", local.Options{Dir: file}, []string{"dir"}},
		{"everything wrong", local.Options{Dir: file, ClusterName: "-", Apply: []string{"nope"}}, []string{"clusterName", "dir", "apply[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.opts.Validate()
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("Validate() fields = %v, want %v (%v)", got, tc.fields, errs)
			}
		})
	}
}

func TestUpStopsEverythingWhenAComponentFails(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var events []string
	ok := &recorder{name: "ok", mu: &mu, events: &events}
	_, err := local.Up(t.Context(), local.Options{Dir: dir, Components: []local.Component{ok, failing{}}, Progress: tlog{t}})
	if err == nil || !strings.Contains(err.Error(), "starting broken: no luck") {
		t.Fatalf("Up = %v, want the broken component's error", err)
	}
	want := []string{"start ok (api up: true)", "stop ok (api up: true)"}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
	if left := controlplane.ProcessesUsing(dir); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig written although Up failed (stat: %v)", err)
	}
}

// tlog sends progress lines to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
