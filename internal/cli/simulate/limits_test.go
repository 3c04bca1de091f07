package simulate_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runDeadline is run with a deadline: the command is killed after d. It
// also returns the CPU time the command used (user and system): on a busy
// machine that, not the wall clock, is what the command costs.
func runDeadline(t *testing.T, d time.Duration, stdin string, args ...string) (string, string, int, time.Duration) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(d, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	elapsed := time.Since(start)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if elapsed >= d {
		t.Fatalf("%v did not finish within %v", args, d)
	}
	return stdout.String(), stderr.String(), code, cpu
}

func TestInputLimits(t *testing.T) {
	t.Run("dev-zero is refused at 256 MiB", func(t *testing.T) {
		stdout, stderr, code, _ := runDeadline(t, 30*time.Second, "", "simulate", "-f", "/dev/zero")
		if code != 2 || stdout != "" || !strings.Contains(stderr, "/dev/zero") || !strings.Contains(stderr, "256 MiB") {
			t.Fatalf("exit %d stdout %q stderr %q, want 2 naming the file and the limit", code, stdout, stderr)
		}
	})
	t.Run("300 bytes, 10M replicas: exit 2 in under 1s", func(t *testing.T) {
		in := `apiVersion: apps/v1
kind: Deployment
metadata: {name: huge}
spec:
  replicas: 10000000
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]}
`
		stdout, stderr, code, cpu := runDeadline(t, 30*time.Second, in, "simulate", "-f", "-")
		if code != 2 || stdout != "" || !strings.Contains(stderr, `(document 1, Deployment "huge")`) || !strings.Contains(stderr, "--max-pods") {
			t.Fatalf("exit %d stdout %q stderr %q, want 2 naming the document and --max-pods", code, stdout, stderr)
		}
		if cpu > time.Second {
			t.Errorf("took %v of CPU, want under 1s", cpu)
		}
	})
	t.Run("--max-pods", func(t *testing.T) {
		in := "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c}]}\n"
		_, stderr, code, _ := runDeadline(t, 30*time.Second, in, "simulate", "-f", "-", "--max-pods", "1")
		if code != 2 || !strings.Contains(stderr, `(document 2, Pod "b")`) || !strings.Contains(stderr, "2 pods") {
			t.Fatalf("exit %d stderr %q", code, stderr)
		}
		_, stderr, code, _ = runDeadline(t, 30*time.Second, in, "simulate", "-f", "-", "--max-pods", "0")
		if code != 2 || !strings.Contains(stderr, "--max-pods") {
			t.Fatalf("--max-pods 0: exit %d stderr %q", code, stderr)
		}
	})
	t.Run("empty input", func(t *testing.T) {
		for _, in := range []string{"", "# nothing\n---\n"} {
			stdout, stderr, code, _ := runDeadline(t, 30*time.Second, in, "simulate", "-f", "-")
			if code != 2 || stdout != "" || !strings.Contains(stderr, "empty") {
				t.Fatalf("input %q: exit %d stdout %q stderr %q, want 2 saying the input is empty", in, code, stdout, stderr)
			}
		}
	})
}

// TestOutOfRangeCatalog: a catalog value or price the engine cannot use
// exits 2 naming the field, with nothing on stdout (never $+Inf).
func TestOutOfRangeCatalog(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ catalog, field string }{
		"cpu":   {`{"instanceTypes": [{"name": "t", "capacity": {"cpu": "9223372036854775807", "memory": "1Gi", "pods": "10"}, "offerings": [{"zone": "z1", "capacityType": "spot", "price": 0.1}]}]}`, "instanceTypes[0].capacity[cpu]"},
		"price": {`{"instanceTypes": [{"name": "t", "capacity": {"cpu": "2", "memory": "1Gi", "pods": "10"}, "offerings": [{"zone": "z1", "capacityType": "spot", "price": 1e307}]}]}`, "instanceTypes[0].offerings[0].price"},
	} {
		t.Run(name, func(t *testing.T) {
			path := dir + "/" + name + ".json"
			if err := os.WriteFile(path, []byte(tc.catalog), 0o600); err != nil {
				t.Fatal(err)
			}
			in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n"
			stdout, stderr, code, _ := runDeadline(t, 30*time.Second, in, "simulate", "-f", "-", "--instance-types", path, "-o", "table")
			if code != 2 || stdout != "" || !strings.Contains(stderr, tc.field) {
				t.Fatalf("exit %d stdout %q stderr %q, want 2 naming %s", code, stdout, stderr, tc.field)
			}
		})
	}
}
