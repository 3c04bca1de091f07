package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `make run`'s scenario (`dovetail local demo`, with its own
// stack) without a terminal and checks the plain output: one line per
// tick, the spot interruption handled (announced, acted on by dovetail,
// and every pod Running again after it), then the scale-down: fewer nodes
// and a lower $/h, the savings reported, every remaining pod Running.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 9*time.Minute)
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
	order := []string{"deploy: applying", "scale-up: every demo pod is Running", "interrupt: spot interruption for node", "SpotInterrupted", "is gone and every demo pod is Running again",
		"scale-down: scaling web to 6", "consolidation saves $", "done: scenario complete"}
	at := 0
	for _, want := range order {
		i := strings.Index(all[at:], want)
		if i < 0 {
			t.Fatalf("the output lacks %q after position %d:\n%s", want, at, all)
		}
		at += i
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, " pending=0 ") || !strings.Contains(last, " running=12 ") {
		t.Errorf("the last line is not every demo pod (12 after the scale-down) Running: %q", last)
	}
	// The scale-down's report: fewer nodes, a lower $/h.
	var from, to int
	var before, after, saved float64
	i := strings.Index(all, "scale-down: ")
	j := strings.Index(all[i+1:], "scale-down: ")
	if _, err := fmt.Sscanf(all[i+1+j:], "scale-down: %d -> %d nodes, $%f/h -> $%f/h: consolidation saves $%f/h", &from, &to, &before, &after, &saved); err != nil {
		t.Fatalf("the scale-down report does not parse (%v): %q", err, all[i+1+j:min(len(all), i+1+j+200)])
	}
	t.Logf("demo scale-down: %d -> %d nodes, $%.4f/h -> $%.4f/h (saved $%.4f/h)", from, to, before, after, saved)
	if to >= from || after >= before || saved <= 0 {
		t.Errorf("the scale-down did not shrink the fleet: %d -> %d nodes, $%.4f -> $%.4f/h", from, to, before, after)
	}
}
