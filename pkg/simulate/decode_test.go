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
