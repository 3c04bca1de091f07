package explain_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/testutil/hostile"
	"github.com/dovetail-sh/dovetail/pkg/explain"
)

// TestWriteTextEscapesEveryString is issue 34 item 2 for `explain`: every
// name, label and message of a pod's, a NodeClaim's and a node's answer is
// escaped in text output.
func TestWriteTextEscapesEveryString(t *testing.T) {
	for _, state := range []string{"Pending", "Bound", "Finished"} {
		var p explain.Pod
		hostile.Fill(&p, hostile.Name)
		p.State = state
		check(t, "pod "+state, p.WriteText)
	}
	var nc explain.NodeClaim
	hostile.Fill(&nc, hostile.Name)
	nc.CheaperTotal = 2
	check(t, "nodeclaim", nc.WriteText)
	for _, decision := range []string{"kept", "Underutilized"} {
		var n explain.NodeResult
		hostile.Fill(&n, hostile.Name)
		n.Decision = decision
		check(t, "node "+decision, n.WriteText)
	}
}

func check(t *testing.T, what string, write func(w io.Writer) error) {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(what, err)
	}
	if n := hostile.ControlBytes(b.String()); n != 0 {
		t.Errorf("%s: text holds %d control bytes:\n%q", what, n, b.String())
	}
	if !strings.Contains(b.String(), `evil\x1b]0;pwned`) {
		t.Errorf("%s: text does not show the escaped name:\n%s", what, b.String())
	}
}
