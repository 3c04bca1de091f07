package controlplane

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bare returns a ControlPlane with a directory and binaries but no
// components, to drive launch directly.
func bare(t *testing.T) (*ControlPlane, *bytes.Buffer) {
	t.Helper()
	binDir, err := ResolveBinDir(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	c := &ControlPlane{
		dir:      t.TempDir(),
		binDir:   binDir,
		progress: &syncWriter{w: &progress},
		closing:  make(chan struct{}),
		exited:   make(chan struct{}),
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, &progress
}

// keepOpen hands out an occupied port: closing it leaves the port bound.
type keepOpen struct{ net.Listener }

func (keepOpen) Close() error { return nil }

func TestLaunchRetriesAfterPortClash(t *testing.T) {
	c, progress := bare(t)
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	taken := blocker.Addr().(*net.TCPAddr).Port

	// The first port handed out (etcd's client port) is one we hold.
	orig := listenFree
	calls := 0
	listenFree = func() (net.Listener, error) {
		calls++
		if calls == 1 {
			return keepOpen{blocker}, nil
		}
		return orig()
	}
	t.Cleanup(func() { listenFree = orig })

	if err := c.startEtcd(t.Context()); err != nil {
		t.Fatalf("startEtcd after a port clash: %v", err)
	}
	if !strings.Contains(progress.String(), "etcd lost a port to another process; retrying on new ports") {
		t.Errorf("no retry reported:\n%s", progress)
	}
	if log, _ := os.ReadFile(c.LogPath("etcd")); !bytes.Contains(log, []byte("address already in use")) {
		t.Errorf("etcd's log does not show the clash:\n%s", log)
	}
	if c.etcdURL == "" || strings.HasSuffix(c.etcdURL, ":"+strconv.Itoa(taken)) {
		t.Errorf("etcd serves on %q, want a port other than the taken %d", c.etcdURL, taken)
	}
}

func TestStartErrorCarriesLogTail(t *testing.T) {
	c, _ := bare(t)
	_, err := c.launch(t.Context(), component{
		name:  "etcd",
		ports: 1,
		args:  func([]int) []string { return []string{"--no-such-flag-for-etcd"} },
		ready: func(context.Context, []int) error { return errors.New("never ready") },
	})
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("launch = %v, want a StartError", err)
	}
	if se.Component != "etcd" || se.Log != c.LogPath("etcd") {
		t.Errorf("StartError names %q and %q, want etcd and %s", se.Component, se.Log, c.LogPath("etcd"))
	}
	if !strings.Contains(se.LogTail, "no-such-flag-for-etcd") || !strings.Contains(err.Error(), "no-such-flag-for-etcd") {
		t.Errorf("the error does not carry the log's complaint:\n%v", err)
	}
}
