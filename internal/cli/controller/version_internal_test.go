package controller

import (
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// TestEKSControlPlaneChoosesTheVersionSource: EKS_CONTROL_PLANE works as
// the peer's does. false (the default): the Kubernetes version nodes are
// told, and AMI aliases resolve for, is the API server's; true: the
// provider reads it with eks:DescribeCluster (left empty for it to ask).
func TestEKSControlPlaneChoosesTheVersionSource(t *testing.T) {
	o := operator.DefaultOptions()
	o.ClusterName = "prod"
	if got := providerOptions(o, "1.37").KubernetesVersion; got != "1.37" {
		t.Errorf("EKS_CONTROL_PLANE=false: version %q, want the API server's 1.37", got)
	}
	o.Peer.EKSControlPlane = true
	if got := providerOptions(o, "1.37").KubernetesVersion; got != "" {
		t.Errorf("EKS_CONTROL_PLANE=true: version %q, want empty (read with eks:DescribeCluster)", got)
	}
	if po := providerOptions(o, "1.37"); po.ClusterName != "prod" || po.VMMemoryOverheadPercent != o.Peer.VMMemoryOverheadPercent {
		t.Errorf("settings lost: %+v", po)
	}
}

// TestDisableDryRunReachesProvider: DISABLE_DRY_RUN is handed to the AWS
// provider (which skips the EC2NodeClass dry-run launch calls), off by
// default as the peer's.
func TestDisableDryRunReachesProvider(t *testing.T) {
	o := operator.DefaultOptions()
	o.ClusterName = "prod"
	if providerOptions(o, "1.37").DisableDryRun {
		t.Error("DisableDryRun on by default, want off (classes are dry-run validated)")
	}
	o.Peer.DisableDryRun = true
	if !providerOptions(o, "1.37").DisableDryRun {
		t.Error("DISABLE_DRY_RUN=true did not reach the provider")
	}
}
