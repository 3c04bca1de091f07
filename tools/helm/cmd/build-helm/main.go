// Command build-helm builds the pinned Helm CLI into a cache directory keyed
// by its version, outside the work tree, the way build-controlplane builds
// the control plane, so that every clone on the machine reuses it.
//
// Usage (from the tools/helm module):
//
//	go run ./cmd/build-helm [-cache DIR]
//
// The cache root is, in order: -cache, $DOVETAIL_CACHE_DIR, then the user
// cache directory (for example ~/.cache/dovetail). The binary lands in
// <root>/helm/<version>/helm; a complete directory is marked by a
// "complete" file and never rebuilt. Progress goes to stderr; the path of
// the binary is printed on stdout.
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

const module = "helm.sh/helm/v4"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "build-helm:", err)
		os.Exit(1)
	}
}

func run() error {
	cacheFlag := flag.String("cache", "", "cache root (default $DOVETAIL_CACHE_DIR or the user cache dir + /dovetail)")
	flag.Parse()

	version, err := moduleVersion(module)
	if err != nil {
		return err
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
	dir := filepath.Join(root, "helm", version)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		fmt.Println(bin)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := lockBuild(dir + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		fmt.Println(bin)
		return nil
	}
	ld := strings.Join([]string{
		"-s", "-w",
		"-X helm.sh/helm/v4/internal/version.version=" + version,
		"-X helm.sh/helm/v4/internal/version.gitTreeState=clean",
	}, " ")
	start := time.Now()
	fmt.Fprintf(os.Stderr, "building helm %s into %s (a cold build takes a few minutes)\n", version, dir)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ld, "-o", bin+".tmp", module+"/cmd/helm")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building helm: %w", err)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "helm built in %s\n", time.Since(start).Round(time.Second))
	fmt.Println(bin)
	return nil
}

// moduleVersion asks the go command for the version this module pins, so
// the cache key always matches go.mod.
func moduleVersion(path string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading the pinned version of %s (run from the tools/helm module): %w", path, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("module %s is not pinned", path)
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
		fmt.Fprintf(os.Stderr, "another build of helm is running; waiting for it\n")
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
	}
	return func() { f.Close() }, nil
}
