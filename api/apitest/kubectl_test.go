package apitest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// examplesDir is the repository's examples/ directory.
func examplesDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("examples directory: %v", err)
	}
	return dir
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := cp.Kubectl(testContext(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// table splits kubectl's tabular output into rows of fields.
func table(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// TestExamplesApplyAndPrint applies every manifest in examples/ with kubectl
// and checks the NodePool columns of the seed's `kubectl get nodepool -o
// wide`.
func TestExamplesApplyAndPrint(t *testing.T) {
	dir := examplesDir(t)
	kubectl(t, "apply", "-f", dir)
	c := newClient(t)
	ctx := testContext(t)
	t.Cleanup(func() { kubectl(t, "delete", "--wait=false", "-f", dir) })

	var pools karpv1.NodePoolList
	if err := c.List(ctx, &pools); err != nil {
		t.Fatal(err)
	}
	if len(pools.Items) == 0 {
		t.Fatal("no NodePool in examples/")
	}

	wide := table(kubectl(t, "get", "nodepools", "-o", "wide"))
	wantHeader := []string{"NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU", "MEMORY"}
	if !slices.Equal(wide[0], wantHeader) {
		t.Fatalf("nodepool -o wide header = %q, want %q", wide[0], wantHeader)
	}
	plain := table(kubectl(t, "get", "nodepools"))
	if !slices.Equal(plain[0], wantHeader[:5]) {
		t.Errorf("nodepool header = %q, want %q", plain[0], wantHeader[:5])
	}

	// Each pool's row shows its node class and weight (no status yet, so
	// NODES, READY, CPU and MEMORY are empty and the row has 4 fields).
	for _, np := range pools.Items {
		row := findRow(wide[1:], np.Name)
		if row == nil {
			t.Errorf("no row for %s", np.Name)
			continue
		}
		want := []string{np.Name, np.Spec.Template.Spec.NodeClassRef.Name, "AGE", itoa(np.Spec.Weight)}
		if len(row) != 4 || row[1] != want[1] || row[3] != want[3] {
			t.Errorf("row %q, want name, node class %s, age, weight %s", row, want[1], want[3])
		}
	}

	// Once the status is filled in, the columns show it.
	np := pools.Items[0].DeepCopy()
	np.Status.Resources = corev1.ResourceList{
		corev1.ResourceCPU:    resourceQuantity(t, "412"),
		corev1.ResourceMemory: resourceQuantity(t, "2907533476Ki"),
		"nodes":               resourceQuantity(t, "78"),
	}
	nodes := int64(78)
	np.Status.Nodes = &nodes
	now := time.Now()
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
	if err := c.Status().Update(ctx, np); err != nil {
		t.Fatalf("status update: %v", err)
	}
	row := findRow(table(kubectl(t, "get", "nodepools", "-o", "wide"))[1:], np.Name)
	want := []string{np.Name, np.Spec.Template.Spec.NodeClassRef.Name, "78", "True", "AGE", itoa(np.Spec.Weight), "412", "2907533476Ki"}
	if len(row) != len(want) {
		t.Fatalf("row %q, want %q", row, want)
	}
	for i := range want {
		if i != 4 && row[i] != want[i] {
			t.Errorf("column %s = %q, want %q", wantHeader[i], row[i], want[i])
		}
	}

	ec2 := table(kubectl(t, "get", "ec2nodeclasses", "-o", "wide"))
	if want := []string{"NAME", "READY", "AGE", "ROLE"}; !slices.Equal(ec2[0], want) {
		t.Errorf("ec2nodeclass -o wide header = %q, want %q", ec2[0], want)
	}
	var classes awsv1.EC2NodeClassList
	if err := c.List(ctx, &classes); err != nil {
		t.Fatal(err)
	}
	for _, nc := range classes.Items {
		if row := findRow(ec2[1:], nc.Name); row == nil || row[len(row)-1] != nc.Spec.Role {
			t.Errorf("ec2nodeclass row %q, want role %q last", row, nc.Spec.Role)
		}
	}

	// The short name and the category work as with the peer.
	if out := kubectl(t, "get", "ec2nc", "-o", "name"); !strings.Contains(out, "ec2nodeclass.karpenter.k8s.aws/") {
		t.Errorf("kubectl get ec2nc: %q", out)
	}
	if out := kubectl(t, "get", "karpenter", "-o", "name"); !strings.Contains(out, "nodepool.karpenter.sh/") || !strings.Contains(out, "ec2nodeclass.karpenter.k8s.aws/") {
		t.Errorf("kubectl get karpenter: %q", out)
	}
}

// TestExamplesRoundTrip decodes what the server stored for each example into
// the Go types and back: nothing the server keeps may be lost by the types.
func TestExamplesRoundTrip(t *testing.T) {
	dir := examplesDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	c := newClient(t)
	ctx := testContext(t)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := fromYAML(t, string(data))
		u.SetName("roundtrip-" + u.GetName())
		if err := c.Create(ctx, u, client.DryRunAll); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		var typed interface{ GetName() string }
		switch u.GetKind() {
		case "NodePool":
			typed = &karpv1.NodePool{}
		case "EC2NodeClass":
			typed = &awsv1.EC2NodeClass{}
		default:
			t.Fatalf("%s: unexpected kind %s", filepath.Base(f), u.GetKind())
		}
		toTyped(t, u, typed)
		back := &unstructured.Unstructured{}
		toUnstructured(t, typed, back)
		// Every field the server stored survives the Go types (values may
		// change spelling: quantities and durations are canonicalised).
		want, got := leafPaths("", u.Object["spec"]), leafPaths("", back.Object["spec"])
		for _, p := range want {
			if !slices.Contains(got, p) {
				t.Errorf("%s: field spec%s lost by the Go types", filepath.Base(f), p)
			}
		}
		// And the Go types' encoding is itself valid.
		back.SetResourceVersion("")
		if err := c.Create(ctx, back, client.DryRunAll); err != nil {
			t.Errorf("%s: the Go types' encoding is refused: %v", filepath.Base(f), err)
		}
	}
}

// leafPaths lists the paths of the non-empty leaves of a decoded JSON value.
func leafPaths(prefix string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(out, leafPaths(prefix+"."+k, e)...)
		}
		return out
	case []any:
		var out []string
		for i, e := range v {
			out = append(out, leafPaths(prefix+"["+strconv.Itoa(i)+"]", e)...)
		}
		return out
	default:
		return []string{prefix}
	}
}

// TestNodeClaimColumns checks `kubectl get nodeclaim` with and without -o
// wide against a NodeClaim whose labels and status are set.
func TestNodeClaimColumns(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "columns", Labels: map[string]string{
			karpv1.LabelInstanceType:    "m7g.large",
			karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeSpot,
			karpv1.LabelTopologyZone:    "us-east-1a",
			karpv1.NodePoolLabelKey:     "arm64-default",
		}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: karpv1.NodeSelectorOpIn, Values: []string{"arm64-default"}},
			},
		},
	}
	if err := c.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, nc) })
	nc.Status.NodeName = "ip-10-0-0-1.ec2.internal"
	nc.Status.ProviderID = "aws:///us-east-1a/i-0123456789abcdef0"
	nc.Status.ImageID = "ami-0123456789abcdef0"
	now := time.Now()
	for _, cond := range karpv1.NodeClaimReadyDependents {
		nc.SetCondition(cond, metav1.ConditionTrue, cond, "", now)
	}
	nc.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "AMIDrift", "", now)
	if err := c.Status().Update(ctx, nc); err != nil {
		t.Fatalf("status update: %v", err)
	}

	wantHeader := []string{"NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE", "IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED"}
	wantRow := []string{"columns", "m7g.large", "spot", "us-east-1a", "ip-10-0-0-1.ec2.internal", "True", "AGE", "ami-0123456789abcdef0", "aws:///us-east-1a/i-0123456789abcdef0", "arm64-default", "default", "True"}
	for _, tc := range []struct {
		name string
		args []string
		n    int
	}{
		{"plain", []string{"get", "nodeclaims"}, 7},
		{"wide", []string{"get", "nodeclaims", "-o", "wide"}, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := table(kubectl(t, tc.args...))
			if !slices.Equal(rows[0], wantHeader[:tc.n]) {
				t.Fatalf("header %q, want %q", rows[0], wantHeader[:tc.n])
			}
			row := findRow(rows[1:], "columns")
			if len(row) != tc.n {
				t.Fatalf("row %q, want %d fields", row, tc.n)
			}
			for i := range tc.n {
				if wantHeader[i] != "AGE" && row[i] != wantRow[i] {
					t.Errorf("%s = %q, want %q", wantHeader[i], row[i], wantRow[i])
				}
			}
		})
	}
}

func findRow(rows [][]string, name string) []string {
	for _, r := range rows {
		if len(r) > 0 && r[0] == name {
			return r
		}
	}
	return nil
}

func itoa(p *int32) string {
	if p == nil {
		return "<none>"
	}
	return strconv.Itoa(int(*p))
}
