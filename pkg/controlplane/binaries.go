package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var (
	binDirMu sync.Mutex
	binDirOK = map[string]bool{} // cache directories found complete
)

// ResolveBinDir returns the directory holding the pinned control-plane
// binaries, building them first when needed:
//
//  1. $DOVETAIL_CONTROLPLANE_DIR when set (it must be complete);
//  2. else the cache directory of the pinned versions (DefaultBinDir) when
//     its build is complete;
//  3. else it runs the tools module's builder (`go run
//     ./cmd/build-controlplane` in the tools/ directory of the checkout
//     that contains the working directory), streaming its progress to
//     progress, and uses what it built.
//
// When none of these works the error wraps ErrBinariesMissing and tells the
// user to run `make controlplane`.
func ResolveBinDir(ctx context.Context, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	if d := os.Getenv(EnvBinDir); d != "" {
		if err := checkBinDir(d); err != nil {
			return "", fmt.Errorf("$%s: %w (run `make controlplane`)", EnvBinDir, err)
		}
		return d, nil
	}
	dir, err := DefaultBinDir()
	if err != nil {
		return "", err
	}
	binDirMu.Lock() // one build at a time in this process
	defer binDirMu.Unlock()
	if binDirOK[dir] || complete(dir) {
		binDirOK[dir] = true
		return dir, nil
	}
	tools, err := findToolsDir()
	if err != nil {
		return "", fmt.Errorf("%w: %s holds no complete build and %v; run `make controlplane` in a dovetail checkout", ErrBinariesMissing, dir, err)
	}
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "control-plane binaries not cached; building them with %s/cmd/build-controlplane (a cold build takes several minutes)\n", tools)
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/build-controlplane", "-cache", root)
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: building them in %s failed: %v (run `make controlplane` to see why)", ErrBinariesMissing, tools, err)
	}
	built := strings.TrimSpace(out.String())
	if filepath.Clean(built) != filepath.Clean(dir) {
		return "", fmt.Errorf("%w: the builder produced %s but this package expects %s: tools/go.mod and the versions in pkg/controlplane disagree", ErrBinariesMissing, built, dir)
	}
	if err := checkBinDir(dir); err != nil {
		return "", err
	}
	binDirOK[dir] = true
	return dir, nil
}

func complete(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		return false
	}
	return checkBinDir(dir) == nil
}

// findToolsDir walks up from the working directory to the first directory
// holding tools/go.mod and returns that tools directory.
func findToolsDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "tools", "go.mod")); err == nil && !fi.IsDir() {
			return filepath.Join(d, "tools"), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no tools/go.mod was found above the working directory " + wd)
		}
	}
}
