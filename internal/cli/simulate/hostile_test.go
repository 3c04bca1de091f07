package simulate_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// controlBytes counts the bytes a terminal acts on (C0 controls other than
// the line breaks and tabs the output itself writes, and DEL).
func controlBytes(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c == 0x7f {
			n++
		}
	}
	return n
}

// hostilePod is a pod whose name carries a terminal title sequence, a
// clear-screen sequence and a CR/LF that would forge a table line; it asks
// for more than any instance type so it is listed as unschedulable too.
const hostileName = "evil\x1b]0;pwned\x07\x1b[2J\r\nTOTAL $0.0000"

func hostileInput(name string) string {
	b, _ := json.Marshal(name)
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + string(b) + "}\nspec: {containers: [{name: c, resources: {requests: {cpu: \"10000\"}}}]}\n"
}

// TestHostileNameRefusedAndEscaped is issue 34 items 2 and 4: a name with
// escape sequences, CR and LF is refused as the API server refuses it, and
// the error names it escaped (nothing a terminal acts on reaches stderr).
func TestHostileNameRefusedAndEscaped(t *testing.T) {
	stdout, stderr, code := run(t, hostileInput(hostileName), "simulate", "-f", "-", "-o", "table")
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d stdout %q, want 2 and nothing", code, stdout)
	}
	if n := controlBytes(stderr); n != 0 {
		t.Fatalf("stderr holds %d control bytes:\n%q", n, stderr)
	}
	if !strings.Contains(stderr, "metadata.name: Invalid value") || !strings.Contains(stderr, `evil\x1b]0;pwned`) {
		t.Fatalf("stderr does not refuse the name, escaped: %s", stderr)
	}
}

// TestErrorsCapEchoedInput is issue 34 item 8: a refused 10 MiB label value
// is not echoed whole on stderr, and the message is escaped.
func TestErrorsCapEchoedInput(t *testing.T) {
	huge := strings.Repeat("v", 10<<20)
	in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: " + huge + "}}\nspec: {containers: [{name: c}]}\n"
	stdout, stderr, code := run(t, in, "simulate", "-f", "-")
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d stdout %d bytes, want 2 and nothing", code, len(stdout))
	}
	if len(stderr) > 16<<10 {
		t.Fatalf("stderr is %d bytes for a refused 10 MiB value; want it capped (starts %.300q)", len(stderr), stderr)
	}
	if !strings.Contains(stderr, "metadata.labels") {
		t.Fatalf("stderr does not name the field: %.500q", stderr)
	}
	in = "apiVersion: v1\nkind: Widget\nmetadata: {name: " + strings.Repeat("w", 1<<20) + "\x1b[2J}\n"
	_, stderr, code = run(t, in, "simulate", "-f", "-")
	if code != 2 || len(stderr) > 16<<10 || controlBytes(stderr) != 0 {
		t.Fatalf("exit %d, stderr %d bytes with %d control bytes: %.300q", code, len(stderr), controlBytes(stderr), stderr)
	}
}
