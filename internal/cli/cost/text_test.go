package cost

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/testutil/hostile"
)

// TestTextEscapesEveryString is issue 34 item 2 for `cost`: a group named
// by a record key or label value with CR/LF and escapes cannot forge a
// TOTAL row or act on the terminal.
func TestTextEscapesEveryString(t *testing.T) {
	var r Report
	hostile.Fill(&r, hostile.Name)
	r.Record.Found = true
	var b bytes.Buffer
	writeText(&b, &r, false)
	if n := hostile.ControlBytes(b.String()); n != 0 {
		t.Fatalf("text holds %d control bytes:\n%q", n, b.String())
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "TOTAL") {
			t.Fatalf("a forged line starts with TOTAL: %q", l)
		}
	}
}
