package simulate_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestMaxPodsCheckedBeforeExpanding: a workload that takes the input over
// MaxPods is refused, naming its document and the count, before any pod
// is made (10M replicas would take gigabytes).
func TestMaxPodsCheckedBeforeExpanding(t *testing.T) {
	deploy := func(name string, n int) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + "}\nspec:\n  replicas: " + strconv.Itoa(n) +
			"\n  selector: {matchLabels: {app: a}}\n  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c}]}}"
	}
	t.Run("over the limit", func(t *testing.T) {
		m := read(t, nodeClassDoc, poolDoc, deploy("small", 6), deploy("big", 5))
		_, _, err := simulate.Input(m, simulate.Options{Region: "us-east-1", MaxPods: 10})
		var ies simulate.InputErrors
		if !errors.As(err, &ies) || len(ies) != 1 {
			t.Fatalf("err = %v, want one input error", err)
		}
		msg := ies[0].Error()
		for _, want := range []string{`in.yaml:`, `(document 4, Deployment "big")`, "spec.replicas", "11 pods", "10"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		m := read(t, nodeClassDoc, poolDoc, deploy("small", 6), deploy("big", 4))
		in, _, err := simulate.Input(m, simulate.Options{Region: "us-east-1", MaxPods: 10})
		if err != nil || len(in.Pods) != 10 {
			t.Fatalf("err = %v, want 10 pods", err)
		}
	})
	t.Run("default limit, 10M replicas", func(t *testing.T) {
		m := read(t, nodeClassDoc, poolDoc, deploy("huge", 10_000_000))
		_, _, err := simulate.Input(m, simulate.Options{Region: "us-east-1"})
		if !errors.Is(err, simulate.ErrBadInput) || !strings.Contains(err.Error(), "10000000 pods") || !strings.Contains(err.Error(), "200000") {
			t.Fatalf("err = %v, want the default limit of 200000 named", err)
		}
	})
}

// TestMaxNodePools: an input with more NodePools than MaxNodePools is
// refused before any pool is compiled, naming the first pool over the
// limit and both counts; at the limit it plans.
func TestMaxNodePools(t *testing.T) {
	pool := func(name string) string { return strings.Replace(poolDoc, "name: general", "name: "+name, 1) }
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}"
	docs := []string{nodeClassDoc, pool("a"), pool("b"), pool("c"), pod}
	t.Run("over the limit", func(t *testing.T) {
		_, err := simulate.Run(read(t, docs...), simulate.Options{Region: "us-east-1", MaxNodePools: 2})
		var ies simulate.InputErrors
		if !errors.As(err, &ies) || len(ies) != 1 || !errors.Is(err, simulate.ErrBadInput) {
			t.Fatalf("err = %v, want one input error", err)
		}
		msg := ies[0].Error()
		for _, want := range []string{`in.yaml:`, `(document 4, NodePool "c")`, "3 NodePools", "limit of 2", "--max-nodepools"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		res, err := simulate.Run(read(t, docs...), simulate.Options{Region: "us-east-1", MaxNodePools: 3})
		if err != nil || len(res.NodeClaims) != 1 {
			t.Fatalf("err = %v, result %+v: want one NodeClaim", err, res)
		}
	})
}
