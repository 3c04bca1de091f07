package crds_test

import (
	"fmt"
	"testing"

	"github.com/dovetail-sh/dovetail/api/crds"
)

func TestObjects(t *testing.T) {
	objs, err := crds.Objects()
	if err != nil {
		t.Fatalf("Objects: %v", err)
	}
	want := []struct{ name, group, kind, version, scope string }{
		{"capacitybuffers.autoscaling.x-k8s.io", "autoscaling.x-k8s.io", "CapacityBuffer", "v1beta1", "Namespaced"},
		{"ec2nodeclasses.karpenter.k8s.aws", "karpenter.k8s.aws", "EC2NodeClass", "v1", "Cluster"},
		{"nodeclaims.karpenter.sh", "karpenter.sh", "NodeClaim", "v1", "Cluster"},
		{"nodeoverlays.karpenter.sh", "karpenter.sh", "NodeOverlay", "v1alpha1", "Cluster"},
		{"nodepools.karpenter.sh", "karpenter.sh", "NodePool", "v1", "Cluster"},
	}
	if len(objs) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(objs), len(want))
	}
	for i, w := range want {
		got := objs[i]
		if got.Name != w.name || got.Spec.Group != w.group || got.Spec.Names.Kind != w.kind {
			t.Errorf("CRD %d = %s (%s/%s), want %s (%s/%s)", i, got.Name, got.Spec.Group, got.Spec.Names.Kind, w.name, w.group, w.kind)
		}
		if string(got.Spec.Scope) != w.scope {
			t.Errorf("%s: scope %q, want %s", got.Name, got.Spec.Scope, w.scope)
		}
		if len(got.Spec.Versions) != 1 || got.Spec.Versions[0].Name != w.version || !got.Spec.Versions[0].Served || !got.Spec.Versions[0].Storage {
			t.Errorf("%s: want exactly one served storage version %s", got.Name, w.version)
			continue
		}
		if got.Spec.Versions[0].Subresources == nil || got.Spec.Versions[0].Subresources.Status == nil {
			t.Errorf("%s: no status subresource", got.Name)
		}
	}
	// Fresh copies: modifying one result must not leak into the next.
	objs[0].Name = "changed"
	again, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Name == "changed" {
		t.Error("Objects returned shared objects")
	}
}

func ExampleObjects() {
	objs, err := crds.Objects()
	if err != nil {
		panic(err)
	}
	for _, crd := range objs {
		fmt.Println(crd.Name, crd.Spec.Names.Kind)
	}
	// Output:
	// capacitybuffers.autoscaling.x-k8s.io CapacityBuffer
	// ec2nodeclasses.karpenter.k8s.aws EC2NodeClass
	// nodeclaims.karpenter.sh NodeClaim
	// nodeoverlays.karpenter.sh NodeOverlay
	// nodepools.karpenter.sh NodePool
}
