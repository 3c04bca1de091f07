package localaws_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/drift"
	ncstatus "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclass/status"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
)

// A newer image published through the emulator's admin API reaches a
// node's Drifted condition through the real chain: the node class status
// controller resolves the alias through SSM again, and the drift
// controller compares the instance's image with the class's AMIs.
func TestPublishedImageDriftsTheNodesOfTheClass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	emu, err := awsemu.Start(ctx, awsemu.Options{
		ClusterName: "test", TimeScale: 0.01, ClusterEndpoint: "https://test.example.invalid",
		ClusterCA: []byte("-----BEGIN CERTIFICATE-----\nTUlJQ0VS\n-----END CERTIFICATE-----\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })

	env := controllerstest.New(t, cp.RESTConfig())
	p, err := awsprovider.New(ctx, emu.AWSConfig(), awsprovider.Options{ClusterName: "test", Reader: env.Client, BatchIdle: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	kube := env.Manager.GetClient()
	env.Start(
		ncstatus.NewController(kube, p.Resolver(), env.Recorder(), 500*time.Millisecond),
		drift.NewController(kube, p, env.Clock, 0),
	)
	class := controllerstest.EC2NodeClass(env.Prefix)
	env.Create(class)
	var before []string
	env.Eventually("the node class to resolve its AMIs", func() (bool, error) {
		err := env.Get(class)
		before = nil
		for _, a := range class.Status.AMIs {
			before = append(before, a.ID)
		}
		return len(before) > 0 && class.IsTrue(karpv1.ConditionTypeReady), err
	})

	// Launch an instance of the class and record it on a NodeClaim.
	nc := controllerstest.NodeClaim(env.Prefix, "default",
		controllerstest.Requirement(corev1.LabelInstanceTypeStable, "m5.large"),
		controllerstest.Requirement(corev1.LabelArchStable, "amd64"))
	nc.Spec.NodeClassRef = controllerstest.NodeClassRef(class.Name)
	env.Create(nc)
	launched, err := p.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Delete(context.Background(), launched) })
	base := nc.DeepCopy()
	nc.Status.ProviderID, nc.Status.ImageID = launched.Status.ProviderID, launched.Status.ImageID
	nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", env.Clock.Now())
	if err := env.Client.Status().Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	controllerstest.Consistently(t, time.Second, "no drift before a new image", func() (bool, error) {
		err := env.Get(nc)
		return nc.GetCondition(karpv1.ConditionTypeDrifted) == nil, err
	})

	res, err := emu.AdminClient().PublishImage(ctx, awsemu.PublishImageRequest{Alias: "al2023@latest"})
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]bool{}
	for _, img := range res.Published {
		published[img.ImageID] = true
	}
	env.Eventually("the class to resolve the new AMIs", func() (bool, error) {
		if err := env.Get(class); err != nil {
			return false, err
		}
		for _, a := range class.Status.AMIs {
			if published[a.ID] {
				return true, nil
			}
		}
		return false, nil
	})
	env.Eventually("the NodeClaim to be Drifted with ImageDrift", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		c := nc.GetCondition(karpv1.ConditionTypeDrifted)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == string(cloudprovider.DriftImage), nil
	})
}
