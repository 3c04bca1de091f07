package controlplanetest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// StartTimeout bounds how long Main waits for the control plane to start.
const StartTimeout = 3 * time.Minute

// Main starts one control plane for a test package, stores it in *cp, runs
// the tests and stops the control plane again. It returns the exit code for
// os.Exit:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplanetest.Main(m, controlplane.Options{Scheduler: true}, &cp))
//	}
//
// When opts.Progress is nil, progress goes to stderr under `go test -v` and
// is discarded otherwise. If the control plane cannot start, Main prints why
// and returns 1 without running any test.
//
// The control plane is stopped whether the tests pass or fail, and on
// SIGINT/SIGTERM. When the test binary dies without running deferred code
// (the -timeout panic, SIGKILL), the kernel kills the components through
// their parent-death signal (see package controlplane) and the next Start
// on the machine removes the abandoned temporary directory.
func Main(m *testing.M, opts controlplane.Options, cp **controlplane.ControlPlane) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
		if testing.Verbose() {
			opts.Progress = os.Stderr
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	c, err := controlplane.Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplanetest: starting the control plane: %v\n", err)
		return 1
	}
	*cp = c

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "controlplanetest: %v: stopping the control plane\n", s)
		_ = c.Close()
		os.Exit(1)
	}()

	code := m.Run()
	signal.Stop(sigs)
	close(sigs)
	if err := c.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplanetest: stopping the control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
