package aws_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	nodeuserdata "github.com/dovetail-sh/dovetail/pkg/awsemu/userdata"
)

// Nodes of a class that does not set kubelet.clusterDNS get the
// kube-system/kube-dns Service's ClusterIP in their user data (AL2023 and
// Bottlerocket); a class that sets it keeps its own.
func TestClusterDNSFromKubeDNSService(t *testing.T) {
	const dnsIP = "10.96.0.10"
	e := newEnv(t, envOptions{})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec: corev1.ServiceSpec{ClusterIP: dnsIP, Selector: map[string]string{"k8s-app": "kube-dns"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
	}
	if err := e.client.Create(e.ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), svc) })

	dnsOf := func(nc *awsv1.EC2NodeClass, reqs ...karpv1.NodeSelectorRequirementWithMinValues) []string {
		t.Helper()
		got, err := e.p.Create(e.ctx, e.claimFor(nc, "dns", reqs...))
		if err != nil {
			t.Fatal(err)
		}
		// Read with the emulator's node-side parser, independent of the
		// renderer.
		node, err := nodeuserdata.Parse(e.instanceOf(got.Status.ProviderID).UserData)
		if err != nil {
			t.Fatal(err)
		}
		return node.ClusterDNS
	}
	if got := dnsOf(e.class); !slices.Equal(got, []string{dnsIP}) {
		t.Errorf("AL2023 user data cluster DNS %v, want [%s] from kube-dns", got, dnsIP)
	}
	spec := discoverySpec()
	spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	br := e.createClass(spec)
	if got := dnsOf(br, in(karpv1.LabelArch, "arm64")); !slices.Equal(got, []string{dnsIP}) {
		t.Errorf("Bottlerocket user data cluster DNS %v, want [%s] from kube-dns", got, dnsIP)
	}
	own := discoverySpec()
	own.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.0.0.53"}}
	mine := e.createClass(own)
	if got := dnsOf(mine); !slices.Equal(got, []string{"10.0.0.53"}) {
		t.Errorf("a class's own kubelet.clusterDNS became %v", got)
	}
}
