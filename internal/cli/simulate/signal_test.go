package simulate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/internal/cli/simulate"
)

// TestSignalStopsFIFORead: a read from a FIFO whose writer never writes
// stops on SIGINT (and on SIGTERM for stdin), with exit code 1 and a word
// saying why.
func TestSignalStopsFIFORead(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "in.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary, "simulate", "-f", fifo)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Opening the FIFO for writing returns once the command has
			// opened it for reading: it is then blocked in the read.
			opened := make(chan *os.File, 1)
			go func() {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					w = nil
				}
				opened <- w
			}()
			select {
			case w := <-opened:
				if w == nil {
					t.Fatal("opening the FIFO for writing failed")
				}
				defer w.Close()
			case err := <-done:
				t.Fatalf("simulate exited before reading the FIFO: %v; stderr %s", err, stderr.String())
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("simulate did not open the FIFO within 30s")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("exit: %v, want 1; stderr %s", err, stderr.String())
				}
				if !strings.Contains(stderr.String(), "interrupted") || stdout.Len() != 0 {
					t.Errorf("stdout %q stderr %q, want nothing and a word about the interruption", stdout.String(), stderr.String())
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("simulate did not stop on %v within 10s", sig)
			}
		})
	}
}

// TestCancelledContextStopsRun: a cancelled context (the signal context of
// the binary) stops Run before a plan is printed.
func TestCancelledContextStopsRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	cmd := simulate.NewCmd(func(_ context.Context, o *simulate.Options) error {
		o.Stdin = strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
		return simulate.Run(ctx, o)
	})
	cmd.SetArgs([]string{"-f", "-"})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	err := cmd.Execute()
	if !errors.Is(err, context.Canceled) || stdout.Len() != 0 {
		t.Fatalf("err = %v, stdout %q; want context.Canceled and no plan", err, stdout.String())
	}
}
