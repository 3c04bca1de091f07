// Command build-controlplane builds the pinned control-plane binaries
// (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and
// kwok) into a cache directory keyed by their versions, outside the work tree,
// so that every clone on the machine reuses them.
//
// Usage (from the tools module):
//
//	go run ./cmd/build-controlplane [-cache DIR] [-print-dir]
//
// The cache root is, in order: -cache, $DOVETAIL_CACHE_DIR, then the user
// cache directory (for example ~/.cache/dovetail). Binaries land in
// <root>/controlplane/<key>/ where key names the pinned versions; a complete
// directory is marked by a "complete" file and never rebuilt. Progress goes to
// stderr; the directory is printed on stdout.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// binary is one command to build.
type binary struct {
	name    string // output file name
	pkg     string // Go package path
	ldflags string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "build-controlplane:", err)
		os.Exit(1)
	}
}

func run() error {
	cacheFlag := flag.String("cache", "", "cache root (default $DOVETAIL_CACHE_DIR or the user cache dir + /dovetail)")
	printKey := flag.Bool("print-key", false, "print the cache key and exit")
	flag.Parse()

	versions, err := moduleVersions()
	if err != nil {
		return err
	}
	key := fmt.Sprintf("k8s-%s_etcd-%s_kwok-%s", versions["k8s.io/kubernetes"], versions["go.etcd.io/etcd/server/v3"], versions["sigs.k8s.io/kwok"])
	if *printKey {
		fmt.Println(key)
		return nil
	}
	root := *cacheFlag
	if root == "" {
		root = os.Getenv("DOVETAIL_CACHE_DIR")
	}
	if root == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("finding the user cache directory: %w", err)
		}
		root = filepath.Join(uc, "dovetail")
	}
	dir := filepath.Join(root, "controlplane", key)
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		fmt.Fprintf(os.Stderr, "control plane %s: cached in %s\n", key, dir)
		fmt.Println(dir)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Test packages run in parallel and may all find the cache cold: let
	// one build while the others wait, then reuse its result.
	unlock, err := lockBuild(dir + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		fmt.Fprintf(os.Stderr, "control plane %s: built by another process in %s\n", key, dir)
		fmt.Println(dir)
		return nil
	}

	k8s := versions["k8s.io/kubernetes"] // v1.37.2
	major, minor := splitVersion(k8s)
	kubeLD := strings.Join([]string{
		"-s", "-w",
		"-X k8s.io/component-base/version.gitVersion=" + k8s,
		"-X k8s.io/component-base/version.gitMajor=" + major,
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/component-base/version.gitCommit=release-" + k8s,
		"-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z",
		"-X k8s.io/client-go/pkg/version.gitVersion=" + k8s,
		"-X k8s.io/client-go/pkg/version.gitMajor=" + major,
		"-X k8s.io/client-go/pkg/version.gitMinor=" + minor,
	}, " ")
	bins := []binary{
		{"etcd", "go.etcd.io/etcd/server/v3", "-s -w"},
		{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", kubeLD},
		{"kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", kubeLD},
		{"kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", kubeLD},
		{"kubectl", "k8s.io/kubernetes/cmd/kubectl", kubeLD},
		{"kwok", "sigs.k8s.io/kwok/cmd/kwok", "-s -w"},
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "building control plane %s into %s (a cold build takes several minutes)\n", key, dir)
	for i, b := range bins {
		if err := build(i+1, len(bins), dir, b); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "control plane built in %s\n", time.Since(start).Round(time.Second))
	fmt.Println(dir)
	return nil
}

// build compiles one binary, printing a heartbeat while the compiler works.
func build(n, total int, dir string, b binary) error {
	out := filepath.Join(dir, b.name)
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", b.ldflags, "-o", tmp, b.pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	start := time.Now()
	fmt.Fprintf(os.Stderr, "[%d/%d] building %s\n", n, total, b.name)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("building %s: %w", b.name, err)
			}
			fmt.Fprintf(os.Stderr, "[%d/%d] built %s in %s\n", n, total, b.name, time.Since(start).Round(time.Second))
			return os.Rename(tmp, out)
		case <-tick.C:
			fmt.Fprintf(os.Stderr, "[%d/%d] still building %s (%s)\n", n, total, b.name, time.Since(start).Round(time.Second))
		}
	}
}

// moduleVersions asks the go command for the versions this module pins, so
// the cache key always matches go.mod.
func moduleVersions() (map[string]string, error) {
	paths := []string{"k8s.io/kubernetes", "go.etcd.io/etcd/server/v3", "sigs.k8s.io/kwok"}
	cmd := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Version}}"}, paths...)...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("reading pinned versions (run from the tools module): %w", err)
	}
	v := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			v[f[0]] = f[1]
		}
	}
	for _, p := range paths {
		if v[p] == "" {
			return nil, fmt.Errorf("module %s is not pinned in the tools module", p)
		}
	}
	return v, nil
}

// lockBuild takes an exclusive flock on path, waiting for another builder
// to finish. The kernel releases it if this process dies.
func lockBuild(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "another build of the control plane is running; waiting for it\n")
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
	}
	return func() { f.Close() }, nil
}

func splitVersion(v string) (major, minor string) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return "0", "0"
	}
	return parts[0], parts[1]
}
