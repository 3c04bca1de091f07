package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `make run`'s scenario (`dovetail local demo`, with its own
// stack) without a terminal and checks the plain output: one line per
// tick, every pod Running at the end, and the spot interruption handled
// (announced, acted on by dovetail, and every pod Running again after it).
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "local", "demo",
		"--dir", filepath.Join(t.TempDir(), "demo"),
		"--apply", filepath.Join(repo, "examples"),
		"--time-scale", "0.05", "--exit-when-done", "--tick", "500ms")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dovetail local demo: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var lines []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 3 {
		t.Fatalf("%d lines of output:\n%s", len(lines), stdout.String())
	}
	for i, l := range lines {
		if strings.Contains(l, "\x1b[") {
			t.Fatalf("line %d has terminal escapes without a terminal: %q", i, l)
		}
		f := strings.Fields(l)
		if len(f) < 6 || !strings.HasPrefix(f[1], "pending=") || !strings.HasPrefix(f[2], "running=") || !strings.HasPrefix(f[3], "nodes=") || !strings.HasPrefix(f[5], "cost=$") {
			t.Fatalf("line %d is not a tick line: %q", i, l)
		}
	}
	all := strings.Join(lines, "\n")
	order := []string{"deploy: applying", "scale-up: every demo pod is Running", "interrupt: spot interruption for node", "SpotInterrupted", "is gone and every demo pod is Running again", "done: scenario complete"}
	at := 0
	for _, want := range order {
		i := strings.Index(all[at:], want)
		if i < 0 {
			t.Fatalf("the output lacks %q after position %d:\n%s", want, at, all)
		}
		at += i
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, " pending=0 ") || !strings.Contains(last, " running=42 ") {
		t.Errorf("the last line is not every demo pod (42) Running: %q", last)
	}
}
