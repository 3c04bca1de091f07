package simulate_test

import (
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestAllDecodeErrorsShown: every field of a document that does not decode
// is reported, each with its path (list indices included), not only the
// first.
func TestAllDecodeErrorsShown(t *testing.T) {
	doc := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  priority: high
  containers:
  - {name: a, resources: {requests: {cpu: lots}}}
  - {name: 7, resources: {requests: {memory: much}}}
  - name: c
    ports: [{containerPort: eighty}]
`
	err := (&simulate.Manifests{}).Read("in.yaml", []byte(doc))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"spec.priority", "spec.containers[0].resources.requests[cpu]", "spec.containers[1].name",
		"spec.containers[1].resources.requests[memory]", "spec.containers[2].ports[0].containerPort",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %s:\n%s", want, msg)
		}
	}
	if !strings.HasPrefix(msg, `in.yaml:1 (document 1, Pod "p"): `) || strings.Count(msg, "\n") != 0 {
		t.Errorf("want one located error for the document: %s", msg)
	}
}

// TestYAMLErrorLines: a YAML syntax error is located by the file's line,
// in the position and in the message alike.
func TestYAMLErrorLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n   bad: indent\n",
			"in.yaml:10 (document 2): not valid YAML: yaml: line 10: "},
		{"apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n   bad: indent\n", "in.yaml:5 (document 1): not valid YAML: yaml: line 5: "},
		{"# c\n--- {a: 1}\n---\n\n\nkind: [\n", "in.yaml:6 (document 3): not valid YAML: yaml: line 6: "},
	} {
		err := (&simulate.Manifests{}).Read("in.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}
