package instance_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

type fixture struct {
	e   *awsemu.Emulator
	p   *instance.Provider
	ec2 *ec2.Client
	req *instance.LaunchRequest
}

func setup(t *testing.T) fixture {
	t.Helper()
	e, _ := awstest.Start(t, awsemu.Options{Seed: 9})
	ctx := context.Background()
	c := awstest.Clients(e)
	r := &nodeclass.Resolver{EC2: c.EC2, SSM: c.SSM, IAM: c.IAM, ClusterName: awstest.ClusterName, Region: e.Options().Region, KubernetesVersion: e.Options().KubernetesVersion}
	disc := map[string]string{"karpenter.sh/discovery": awstest.ClusterName}
	nc, err := r.Resolve(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "i"}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{Tags: disc}}, SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: "KarpenterNodeRole-" + awstest.ClusterName,
	}})
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := launchtemplate.NewProvider(c.EC2, awstest.ClusterName).Ensure(ctx, launchtemplate.Content{
		ImageID: nc.Status.AMIs[0].ID, SecurityGroupIDs: []string{nc.Status.SecurityGroups[0].ID}, InstanceProfile: nc.Status.InstanceProfile,
		HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 1, HTTPTokens: "required",
	})
	if err != nil {
		t.Fatal(err)
	}
	var overrides []instance.Override
	for _, s := range nc.Status.Subnets {
		for _, typ := range []string{"m5.large", "c5.large"} {
			overrides = append(overrides, instance.Override{InstanceType: typ, SubnetID: s.ID, Zone: s.Zone})
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	p := instance.New(bctx, instance.Options{EC2: c.EC2, BatchIdle: 30 * time.Millisecond})
	return fixture{e: e, p: p, ec2: c.EC2, req: &instance.LaunchRequest{
		CapacityType: "spot", Tags: map[string]string{"kubernetes.io/cluster/" + awstest.ClusterName: "owned", "karpenter.sh/nodepool": "p"},
		Configs: []instance.LaunchConfig{{LaunchTemplateName: tpl.Name, Overrides: overrides}},
	}}
}

func count(e *awsemu.Emulator, action string) int {
	n := 0
	for _, c := range e.Calls() {
		if c.Action == action {
			n++
		}
	}
	return n
}

func TestBatchedLaunchDescribeTerminate(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const n = 12
	var wg sync.WaitGroup
	results := make([]*instance.LaunchResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.p.Launch(ctx, f.req)
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range results {
		if r == nil || r.Instance == nil {
			t.Fatalf("a caller got no instance: %+v", r)
		}
		ids[r.Instance.ID] = true
		if r.Instance.CapacityType != "spot" || r.Instance.Zone == "" || r.Instance.SubnetID == "" {
			t.Errorf("instance %+v lacks fleet details", r.Instance)
		}
	}
	if len(ids) != n {
		t.Errorf("%d distinct instances for %d callers", len(ids), n)
	}
	if got := count(f.e, "ec2:CreateFleet"); got >= n/2 {
		t.Errorf("%d CreateFleet calls for %d concurrent identical launches", got, n)
	}
	// Concurrent Gets share DescribeInstances calls.
	before := count(f.e, "ec2:DescribeInstances")
	for id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := f.p.Get(ctx, id)
			if err != nil || in.ID != id || in.Tags["karpenter.sh/nodepool"] != "p" {
				t.Errorf("Get(%s) = %+v, %v", id, in, err)
			}
		}()
	}
	wg.Wait()
	if got := count(f.e, "ec2:DescribeInstances") - before; got >= n/2 {
		t.Errorf("%d DescribeInstances calls for %d concurrent Gets", got, n)
	}
	// Terminate all plus one unknown id, together: the unknown one is
	// NotFound, the others terminate.
	missing := "i-0000000000000beef"
	errs := map[string]error{}
	var mu sync.Mutex
	for id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.p.Terminate(ctx, id)
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := f.p.Terminate(ctx, missing)
		mu.Lock()
		errs[missing] = err
		mu.Unlock()
	}()
	wg.Wait()
	for id, err := range errs {
		if id == missing {
			if !instance.IsNotFound(err) {
				t.Errorf("Terminate(unknown) = %v, want NotFound", err)
			}
		} else if err != nil {
			t.Errorf("Terminate(%s) = %v", id, err)
		}
	}
	for _, in := range f.e.Instances() {
		if ids[in.ID] && in.State != awsemu.StateShuttingDown && in.State != awsemu.StateTerminated {
			t.Errorf("%s is %s after Terminate", in.ID, in.State)
		}
	}
	if _, err := f.p.Get(ctx, missing); !instance.IsNotFound(err) {
		t.Errorf("Get(unknown) = %v", err)
	}
}

func TestFleetErrorsReported(t *testing.T) {
	f := setup(t)
	f.e.InjectICE("m5.large", "", "spot")
	r, err := f.p.Launch(context.Background(), f.req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Instance == nil || r.Instance.Type != "c5.large" {
		t.Errorf("instance %+v, want c5.large with m5.large out of capacity", r.Instance)
	}
	iced := 0
	for _, fe := range r.Errors {
		if fe.Code == "InsufficientInstanceCapacity" && fe.InstanceType == "m5.large" && fe.Zone != "" && fe.CapacityType == "spot" {
			iced++
		}
	}
	if iced != 3 {
		t.Errorf("%d insufficient-capacity errors for m5.large, want one per zone (3): %+v", iced, r.Errors)
	}
}
