package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The versions of the components this package runs. They must equal the
// versions the tools module pins (tools/go.mod); a test checks that they do,
// because the cache directory of the binaries is named after them.
const (
	KubernetesVersion = "v1.37.2" // kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
	EtcdVersion       = "v3.7.3"
	KwokVersion       = "v0.8.0"
)

// CacheKey names the directory, under <cache root>/controlplane/, that holds
// the binaries of the pinned versions. The tools module's build-controlplane
// command computes the same key from its go.mod.
func CacheKey() string {
	return fmt.Sprintf("k8s-%s_etcd-%s_kwok-%s", KubernetesVersion, EtcdVersion, KwokVersion)
}

// EnvBinDir names the environment variable that, when set, points straight at
// a directory holding the control-plane binaries (the Makefile sets it).
const EnvBinDir = "DOVETAIL_CONTROLPLANE_DIR"

// EnvCacheDir names the environment variable that overrides the cache root
// (default: the user cache directory + "/dovetail").
const EnvCacheDir = "DOVETAIL_CACHE_DIR"

// binaryNames are the executables a complete binary directory holds.
var binaryNames = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// CacheRoot returns the root of dovetail's build cache: $DOVETAIL_CACHE_DIR,
// else the user cache directory + "/dovetail".
func CacheRoot() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	uc, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(uc, "dovetail"), nil
}

// DefaultBinDir returns where the binaries of the pinned versions live in the
// cache: <cache root>/controlplane/<CacheKey()>. The directory may not exist yet.
func DefaultBinDir() (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "controlplane", CacheKey()), nil
}

// checkBinDir reports whether dir holds every binary.
func checkBinDir(dir string) error {
	var missing []string
	for _, name := range binaryNames {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s lacks %v", ErrBinariesMissing, dir, missing)
	}
	return nil
}

// ErrBinariesMissing is returned (wrapped) when the control-plane binaries
// are not where they should be and cannot be built.
var ErrBinariesMissing = errors.New("control-plane binaries missing")
