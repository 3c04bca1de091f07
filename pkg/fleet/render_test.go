package fleet_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/internal/testutil/hostile"
	"github.com/dovetail-sh/dovetail/pkg/fleet"
)

// TestTableEscapesEveryString is issue 34 item 2 for `top`: node, pool,
// instance type, capacity type and zone are escaped; only the screen's own
// sequences (clear, bold) are written raw, and only on a terminal.
func TestTableEscapesEveryString(t *testing.T) {
	var row fleet.Node
	hostile.Fill(&row, hostile.Name)
	out := fleet.Table([]fleet.Node{row}, time.Unix(0, 0), 0, false)
	if n := hostile.ControlBytes(out); n != 0 {
		t.Fatalf("table holds %d control bytes:\n%q", n, out)
	}
	if !strings.Contains(out, `evil\x1b]0;pwned`) {
		t.Fatalf("table does not show the escaped name:\n%s", out)
	}
}
