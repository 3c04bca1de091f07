package charts_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestInstallGuideQuotesRealOutput: every block of docs/install.md marked
// `<!-- helm-template: ARGS -->` is, line for line, part of what
// `helm template dovetail ./dovetail ARGS` prints.
func TestInstallGuideQuotesRealOutput(t *testing.T) {
	data, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	marked := regexp.MustCompile("(?s)<!-- helm-template: ([^>]*) -->\n```yaml\n(.*?)```")
	quotes := marked.FindAllStringSubmatch(string(data), -1)
	if len(quotes) < 2 {
		t.Fatalf("docs/install.md has %d checked helm template quotes, want at least 2", len(quotes))
	}
	for _, q := range quotes {
		args := strings.Fields(q[1])
		out, stderr, err := runHelmSplit(t, append([]string{"template", "dovetail", "./dovetail"}, args...)...)
		if err != nil {
			t.Fatalf("helm template %s: %v\n%s%s", q[1], err, stderr, out)
		}
		if !strings.Contains(out, q[2]) {
			t.Errorf("docs/install.md quotes output that `helm template dovetail charts/dovetail %s` does not print:\n%s", q[1], q[2])
		}
	}
}
