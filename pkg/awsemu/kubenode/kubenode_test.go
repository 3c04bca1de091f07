package kubenode_test

import (
	"context"
	"encoding/base64"
	"errors"
	"hash/fnv"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/kubenode"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/userdata"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{Kwok: true}, &cp))
}

const nodeadmUserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "node agents configured" > /etc/node-agents.done

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: local
  kubelet:
    config:
      maxPods: 58
      kubeReserved:
        memory: 1Gi
    flags:
    - --node-labels=karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=b
    - --register-with-taints=karpenter.sh/unregistered:NoExecute,example.com/agent-not-ready:NoSchedule,dedicated=b:NoSchedule

--BOUNDARY--
`

const bottlerocketUserData = `[settings.kubernetes]
cluster-name = 'local'
max-pods = 31
[settings.kubernetes.node-labels]
'karpenter.sh/nodepool' = 'br'
[settings.kubernetes.node-taints]
'karpenter.sh/unregistered' = [':NoExecute']
`

const al2UserData = `#!/bin/bash -xe
/etc/eks/bootstrap.sh 'local' --use-max-pods false \
--kubelet-extra-args '--node-labels="karpenter.sh/nodepool=al2" --register-with-taints="karpenter.sh/unregistered=:NoExecute"'
`

type fixture struct {
	emu    *awsemu.Emulator
	ec2    *ec2.Client
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	booter *kubenode.Booter
	clock  *clocktesting.FakeClock
}

func setup(t *testing.T, opts ...kubenode.Options) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// A seed per test gives each test its own addresses, hence node names.
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	emu, err := awsemu.Start(ctx, awsemu.Options{TimeScale: 0.01, Seed: int64(h.Sum64())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	clk := clocktesting.NewFakeClock(time.Now())
	var o kubenode.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Clock = clk
	b, err := kubenode.Start(ctx, cp.RESTConfig(), emu, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	cfg := emu.AWSConfig()
	return &fixture{emu: emu, ec2: ec2.NewFromConfig(cfg), kube: kube, dyn: dyn, booter: b, clock: clk}
}

// launch creates a launch template with the user data and launches one
// instance of the type, tagged with the NodeClaim name.
func (f *fixture) launch(t *testing.T, name, imagePattern, userData, typ, nodeClaim string) awsemu.Instance {
	t.Helper()
	ctx := context.Background()
	imgs, err := f.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{imagePattern}}}})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("images %s: %v", imagePattern, err)
	}
	_, err = f.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:  imgs.Images[0].ImageId,
			UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	subnets, err := f.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(typ), SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: "spot"},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
			Tags: []ec2types.Tag{{Key: aws.String(kubenode.TagNodeClaim), Value: aws.String(nodeClaim)}}}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("CreateFleet: %v %+v", err, out)
	}
	in, ok := f.emu.Instance(out.Instances[0].InstanceIds[0])
	if !ok {
		t.Fatal("launched instance not found")
	}
	return in
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	poll.Until(t, timeout, 20*time.Millisecond, what, cond)
}

func (f *fixture) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	waitUntil(t, 30*time.Second, "node "+name, func() (bool, error) {
		n, err := f.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		node = n
		return err == nil, err
	})
	return node
}

// taintStrings lists a node's taints, leaving out node.kubernetes.io/not-ready:
// the API server's admission adds it to every new Node until the node
// lifecycle controller (not run in this package's control plane) sees it
// Ready, as it does for real kubelets.
func taintStrings(ts []corev1.Taint) []string {
	var out []string
	for _, t := range ts {
		if t.Key == corev1.TaintNodeNotReady {
			continue
		}
		out = append(out, t.ToString())
	}
	sort.Strings(out)
	return out
}

func TestNodeBootsWithTheUserDataAndGoesAway(t *testing.T) {
	// The stack runs an agent for example.com/agent-not-ready only.
	f := setup(t, kubenode.Options{StartupTaintKeys: []string{"example.com/agent-not-ready"}})
	ctx := context.Background()
	// The NodeClaim names two of the registered taints as startup taints:
	// one the stack's agent owns, and dedicated, which no agent owns.
	nc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": "default-boot1"},
		"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
			"requirements": []any{},
			"startupTaints": []any{map[string]any{"key": "example.com/agent-not-ready", "effect": "NoSchedule"},
				map[string]any{"key": "dedicated", "value": "b", "effect": "NoSchedule"}},
		},
	}}
	gvr := schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	if _, err := f.dyn.Resource(gvr).Create(ctx, nc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the NodeClaim: %v", err)
	}
	t.Cleanup(func() { _ = f.dyn.Resource(gvr).Delete(context.Background(), "default-boot1", metav1.DeleteOptions{}) })

	in := f.launch(t, "boot-al2023", "amazon-eks-node-al2023-arm64-standard-*", nodeadmUserData, "m7g.large", "default-boot1")
	node := f.node(t, in.PrivateDNSName)

	wantLabels := map[string]string{
		// from the user data
		"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "default", "team": "b",
		// what every kubelet sets
		"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": in.PrivateDNSName,
		"node.kubernetes.io/instance-type": "m7g.large", "topology.kubernetes.io/zone": in.Zone,
		"topology.kubernetes.io/region": "us-east-1",
	}
	if !reflect.DeepEqual(node.Labels, wantLabels) {
		t.Errorf("labels\n got %v\nwant %v", node.Labels, wantLabels)
	}
	wantTaints := []string{"dedicated=b:NoSchedule", "example.com/agent-not-ready:NoSchedule", "karpenter.sh/unregistered:NoExecute"}
	if got := taintStrings(node.Spec.Taints); !reflect.DeepEqual(got, wantTaints) {
		t.Errorf("taints %v, want %v", got, wantTaints)
	}
	if want := "aws:///" + in.Zone + "/" + in.ID; node.Spec.ProviderID != want {
		t.Errorf("provider id %q, want %q", node.Spec.ProviderID, want)
	}
	if pods := node.Status.Capacity.Pods().Value(); pods != 58 {
		t.Errorf("capacity pods %d, want the user data's 58", pods)
	}
	// Allocatable memory = capacity - kube-reserved (1Gi from user data) -
	// the default eviction threshold (100Mi).
	mem := node.Status.Capacity.Memory().DeepCopy()
	mem.Sub(*resource1Gi())
	mem.Sub(*resource100Mi())
	if got := node.Status.Allocatable.Memory(); got.Cmp(mem) != 0 {
		t.Errorf("allocatable memory %s, want capacity %s - 1Gi - 100Mi = %s", got, node.Status.Capacity.Memory(), &mem)
	}
	typ, _ := catalog.Builtin().Type("m7g.large")
	if got := node.Status.Capacity.Cpu().Value(); got != int64(typ.VCPU) {
		t.Errorf("cpu %d, want %d", got, typ.VCPU)
	}

	waitUntil(t, 60*time.Second, "kwok to make the node Ready", func() (bool, error) {
		n, err := f.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	// The stand-in agent removes the taint of its key once its delay passes
	// on the clock, and nothing else: the NodeClaim's other startup taint
	// stays, as no agent owns it (karpenter never removes startup taints).
	if got := taintStrings(f.node(t, node.Name).Spec.Taints); len(got) != 3 {
		t.Fatalf("taints changed before the agent's delay: %v", got)
	}
	waitUntil(t, 10*time.Second, "the agent to wait on the clock", func() (bool, error) { return f.clock.HasWaiters(), nil })
	f.clock.Step(kubenode.DefaultStartupTaintDelay)
	waitUntil(t, 30*time.Second, "the startup taint to go", func() (bool, error) {
		n, err := f.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return reflect.DeepEqual(taintStrings(n.Spec.Taints), []string{"dedicated=b:NoSchedule", "karpenter.sh/unregistered:NoExecute"}), nil
	})

	if _, err := f.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{in.ID}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the node to be deleted", func() (bool, error) {
		_, err := f.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func TestEveryUserDataFormatBoots(t *testing.T) {
	f := setup(t)
	cases := []struct {
		name, image, userData, typ string
		labels                     map[string]string
		taints                     []string
		pods                       int64
	}{
		{
			name: "bottlerocket", image: "bottlerocket-aws-k8s-*-x86_64-*", userData: bottlerocketUserData, typ: "c5.large",
			labels: map[string]string{"karpenter.sh/nodepool": "br"}, taints: []string{"karpenter.sh/unregistered:NoExecute"}, pods: 31,
		},
		{
			name: "al2", image: "amazon-eks-node-1.37-*", userData: al2UserData, typ: "m5.large",
			labels: map[string]string{"karpenter.sh/nodepool": "al2"}, taints: []string{"karpenter.sh/unregistered:NoExecute"}, pods: 110,
		},
		{
			// No kubelet settings: the type's ENI pod limit, no extra labels.
			name: "plain script", image: "amazon-eks-node-al2023-x86_64-standard-*", userData: "#!/bin/bash\ntrue\n", typ: "m5.large",
			labels: map[string]string{}, taints: nil, pods: 29,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := f.launch(t, "fmt-"+strings.ReplaceAll(tc.name, " ", "-"), tc.image, tc.userData, tc.typ, "")
			node := f.node(t, in.PrivateDNSName)
			for k, v := range tc.labels {
				if node.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, node.Labels[k], v)
				}
			}
			if extra := len(node.Labels) - len(tc.labels) - 6; extra != 0 {
				t.Errorf("labels %v: %d more than the user data's and the six well-known", node.Labels, extra)
			}
			if got := taintStrings(node.Spec.Taints); !reflect.DeepEqual(got, tc.taints) {
				t.Errorf("taints %v, want %v", got, tc.taints)
			}
			if got := node.Status.Capacity.Pods().Value(); got != tc.pods {
				t.Errorf("pods %d, want %d", got, tc.pods)
			}
		})
	}
}

func TestBadUserDataRegistersNoNode(t *testing.T) {
	f := setup(t)
	in := f.launch(t, "bad", "bottlerocket-aws-k8s-*-x86_64-*", "[settings.kubernetes]\nmax-pods = 'lots'\n", "c5.large", "")
	waitUntil(t, 30*time.Second, "the booter to give up on the instance", func() (bool, error) {
		return f.booter.Err(in.ID) != nil, nil
	})
	var pe *userdata.Error
	if err := f.booter.Err(in.ID); !errors.As(err, &pe) || pe.Format != userdata.FormatBottlerocket || pe.Line != 2 {
		t.Errorf("error %v does not name the format and line", err)
	}
	if _, err := f.kube.CoreV1().Nodes().Get(context.Background(), in.PrivateDNSName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a node registered despite bad user data: %v", err)
	}
}

func resource1Gi() *resource.Quantity   { q := resource.MustParse("1Gi"); return &q }
func resource100Mi() *resource.Quantity { q := resource.MustParse("100Mi"); return &q }

func nodeCondition(n *corev1.Node, typ string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// A node fault set on the emulator shows in the Node (condition held from
// kwok by its label); each EC2 reboot gives the Node a new boot id; a
// fault that persists stays through a reboot, one that clears on reboot
// is gone after it, with the label.
func TestNodeFaultAndReboot(t *testing.T) {
	f := setup(t)
	in := f.launch(t, "reboot", "bottlerocket-aws-k8s-*-x86_64-*", bottlerocketUserData, "c5.large", "nc-reboot")
	node := f.node(t, in.PrivateDNSName)
	boot0 := node.Status.NodeInfo.BootID
	ctx := context.Background()
	get := func() *corev1.Node {
		n, err := f.kube.CoreV1().Nodes().Get(ctx, in.PrivateDNSName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	since := time.Now().Add(-11 * time.Minute).UTC().Truncate(time.Second)
	if err := f.emu.SetNodeFault(in.ID, &awsemu.NodeFault{Type: "AcceleratedHardwareReady", Status: "False", Reason: "NvidiaXID63Error", Since: since}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the fault on the node", func() (bool, error) {
		c := nodeCondition(get(), "AcceleratedHardwareReady")
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "NvidiaXID63Error" && c.LastTransitionTime.Time.Equal(since), nil
	})
	if n := get(); n.Labels[controlplane.HoldConditionsLabel] != controlplane.HoldConditionsValue {
		t.Errorf("faulty node labels %v, want %s=%s", n.Labels, controlplane.HoldConditionsLabel, controlplane.HoldConditionsValue)
	}
	reboot := func() string {
		t.Helper()
		prev := get().Status.NodeInfo.BootID
		if _, err := f.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{in.ID}}); err != nil {
			t.Fatal(err)
		}
		var id string
		waitUntil(t, 30*time.Second, "a new boot id", func() (bool, error) {
			id = get().Status.NodeInfo.BootID
			return id != prev, nil
		})
		return id
	}
	boot1 := reboot()
	if boot1 == boot0 {
		t.Fatalf("boot id unchanged by the reboot: %q", boot1)
	}
	if c := nodeCondition(get(), "AcceleratedHardwareReady"); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("a persistent fault is gone after the reboot: %+v", c)
	}
	if err := f.emu.SetNodeFault(in.ID, &awsemu.NodeFault{Type: "AcceleratedHardwareReady", Status: "False", Reason: "NvidiaXID63Error", Since: since, ClearsOnReboot: true}); err != nil {
		t.Fatal(err)
	}
	if boot2 := reboot(); boot2 == boot1 {
		t.Fatalf("boot id unchanged by the second reboot")
	}
	waitUntil(t, 30*time.Second, "the fault cleared by the reboot", func() (bool, error) {
		n := get()
		return nodeCondition(n, "AcceleratedHardwareReady") == nil && n.Labels[controlplane.HoldConditionsLabel] == "" && n.Annotations[kubenode.AnnotationNodeFault] == "", nil
	})
}
