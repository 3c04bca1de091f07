package simulate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/testutil/hostile"
)

// TestTablesEscapeEveryString is issue 34 item 2: every string of a plan and
// of a disruption plan printed as a table is escaped; -o json keeps the
// exact bytes.
func TestTablesEscapeEveryString(t *testing.T) {
	var r Result
	hostile.Fill(&r, hostile.Name)
	var d DisruptionResult
	hostile.Fill(&d, hostile.Name)
	for name, render := range map[string]func(w *bytes.Buffer, format string) error{
		"plan":       func(w *bytes.Buffer, f string) error { return Render(w, &r, f) },
		"disruption": func(w *bytes.Buffer, f string) error { return RenderDisruption(w, &d, f) },
	} {
		var table, js bytes.Buffer
		if err := render(&table, FormatTable); err != nil {
			t.Fatal(name, err)
		}
		if n := hostile.ControlBytes(table.String()); n != 0 {
			t.Errorf("%s table holds %d control bytes:\n%q", name, n, table.String())
		}
		if !strings.Contains(table.String(), `evil\x1b]0;pwned\x07\x1b[2J\u202e\r\nTOTAL\t$0`) {
			t.Errorf("%s table does not show the escaped name:\n%s", name, table.String())
		}
		if err := render(&js, FormatJSON); err != nil {
			t.Fatal(name, err)
		}
		var back map[string]any
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatal(name, err)
		}
		if !strings.Contains(js.String(), `evil\u001b]0;pwned\u0007\u001b[2J`) {
			t.Errorf("%s json does not hold the exact name: %.300s", name, js.String())
		}
	}
}
