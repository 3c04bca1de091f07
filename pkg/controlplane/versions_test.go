package controlplane_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// toolsDir is the tools module, relative to this package.
var toolsDir = filepath.Join("..", "..", "tools")

// pinnedVersions reads the versions the tools module requires.
func pinnedVersions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(toolsDir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]bool{"k8s.io/kubernetes": true, "go.etcd.io/etcd/server/v3": true, "sigs.k8s.io/kwok": true}
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && want[fields[0]] {
			got[fields[0]] = fields[1]
		}
	}
	if len(got) != len(want) {
		t.Fatalf("tools/go.mod: found %v, want a version for each of %v", got, want)
	}
	return got
}

func TestVersionsMatchToolsModule(t *testing.T) {
	pinned := pinnedVersions(t)
	for _, tc := range []struct {
		module, constant string
	}{
		{"k8s.io/kubernetes", controlplane.KubernetesVersion},
		{"go.etcd.io/etcd/server/v3", controlplane.EtcdVersion},
		{"sigs.k8s.io/kwok", controlplane.KwokVersion},
	} {
		t.Run(tc.module, func(t *testing.T) {
			if pinned[tc.module] != tc.constant {
				t.Errorf("tools/go.mod pins %s %s, pkg/controlplane says %s", tc.module, pinned[tc.module], tc.constant)
			}
		})
	}
}

func TestCacheKeyMatchesBuilder(t *testing.T) {
	cmd := exec.Command("go", "run", "./cmd/build-controlplane", "-print-key")
	cmd.Dir = toolsDir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build-controlplane -print-key: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != controlplane.CacheKey() {
		t.Errorf("the builder's cache key is %q, CacheKey() is %q", got, controlplane.CacheKey())
	}
}

func TestResolveBinDirRejectsIncompleteDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(controlplane.EnvBinDir, dir)
	_, err := controlplane.ResolveBinDir(t.Context(), nil)
	if !errors.Is(err, controlplane.ErrBinariesMissing) {
		t.Fatalf("ResolveBinDir with an empty %s = %v, want ErrBinariesMissing", controlplane.EnvBinDir, err)
	}
	if !strings.Contains(err.Error(), "make controlplane") || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q should name %s and tell the user to run `make controlplane`", err, dir)
	}
}

func TestResolveBinDirWithoutCacheOrCheckout(t *testing.T) {
	t.Setenv(controlplane.EnvBinDir, "")
	t.Setenv(controlplane.EnvCacheDir, t.TempDir())
	t.Chdir(t.TempDir()) // no tools/go.mod above
	_, err := controlplane.ResolveBinDir(t.Context(), nil)
	if !errors.Is(err, controlplane.ErrBinariesMissing) {
		t.Fatalf("ResolveBinDir = %v, want ErrBinariesMissing", err)
	}
	if !strings.Contains(err.Error(), "make controlplane") {
		t.Errorf("error %q should tell the user to run `make controlplane`", err)
	}
}
