// Package helmbin finds the pinned Helm CLI for tests: $DOVETAIL_HELM, else
// the one tools/helm's build-helm builds (or finds in its per-version
// cache).
//
// What must not live here: anything production code uses.
package helmbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

var (
	once sync.Once
	path string
	err  error
)

// Path returns the Helm CLI's path, building it once per process.
func Path() (string, error) {
	once.Do(func() {
		if p := os.Getenv("DOVETAIL_HELM"); p != "" {
			path = p
			return
		}
		_, self, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "run", "./cmd/build-helm")
		cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..", "..", "tools", "helm")
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, runErr := cmd.Output()
		if runErr != nil {
			err = fmt.Errorf("building helm: %v\n%s", runErr, stderr.String())
			return
		}
		path = strings.TrimSpace(string(out))
	})
	return path, err
}
