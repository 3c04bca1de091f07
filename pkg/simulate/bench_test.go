package simulate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// BenchmarkReadAndExpand measures reading 1,000 pod documents and 100
// Deployments of 10 replicas (2,000 pods in all) and expanding them.
func BenchmarkReadAndExpand(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(nodeClassDoc + "---\n" + poolDoc)
	for i := range 1000 {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d, labels: {app: a%d}}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 128Mi}}}]}\n", i, i%7)
	}
	for i := range 100 {
		fmt.Fprintf(&sb, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d%d}\nspec:\n  replicas: 10\n  selector: {matchLabels: {app: d%d}}\n  template:\n    metadata: {labels: {app: d%d}}\n    spec: {containers: [{name: c, resources: {requests: {cpu: 250m}}}]}\n", i, i, i)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		m := &simulate.Manifests{}
		if err := m.Read("bench.yaml", data); err != nil {
			b.Fatal(err)
		}
		c, _, err := m.Cluster()
		if err != nil || len(c.Pods) != 2000 {
			b.Fatalf("%v, %d pods", err, len(c.Pods))
		}
	}
}
