package simulate_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestDisruptionCarriesOnPastABrokenNodePool is issue 34 item 3 for
// `snapshot` + `simulate --disruption`: a cluster file with a NodePool whose
// EC2NodeClass is missing plans the rest, with a warning naming the pool,
// as the controller does. Plain simulate still refuses it (an input being
// written should be fixed).
func TestDisruptionCarriesOnPastABrokenNodePool(t *testing.T) {
	data, err := os.ReadFile("testdata/disruption/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	broken := "\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: broken}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: missing}\n      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]\n"
	m := &simulate.Manifests{}
	if err := m.Read("cluster.yaml", append(data, broken...)); err != nil {
		t.Fatal(err)
	}
	in, warnings, err := simulate.DisruptionInput(m, simulate.Options{Region: "us-east-1"}, disruptionNow)
	if err != nil {
		t.Fatalf("a broken NodePool fails the whole plan: %v", err)
	}
	if _, has := in.Pools["broken"]; has || len(in.Pools) == 0 || len(in.Cluster.Nodes) != 9 {
		t.Errorf("pools %d (broken among them: %v), nodes %d; want the rest planned without it", len(in.Pools), has, len(in.Cluster.Nodes))
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "NodePool broken left out: its EC2NodeClass missing does not exist") {
		t.Errorf("warnings %q do not report the broken pool", warnings)
	}
	if _, err := simulate.RunDisruption(m, simulate.Options{Region: "us-east-1"}, disruptionNow); err != nil {
		t.Errorf("RunDisruption: %v", err)
	}
	if _, err := simulate.Run(m, simulate.Options{Region: "us-east-1"}); err == nil || !strings.Contains(err.Error(), `EC2NodeClass "missing", which is not in the input`) {
		t.Errorf("plain simulate: %v, want the dangling reference refused", err)
	}
}
