package aws_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/iampolicy"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
)

// cp is the package's control plane: a real etcd and kube-apiserver with
// dovetail's CRDs, where the tests keep their EC2NodeClasses.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := awsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := karpv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// syncBuffer collects log lines from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type env struct {
	t      testing.TB
	ctx    context.Context
	emu    *awsemu.Emulator
	p      *awsprovider.Provider
	client client.Client
	logs   *syncBuffer
	class  *awsv1.EC2NodeClass
	// cfg and opts built p: restart builds another provider from them.
	cfg  aws.Config
	opts awsprovider.Options
	// testCalls are actions the test itself makes against the emulator
	// (setting up the account), which checkCallsAllowed does not judge.
	testCalls map[string]bool
}

// restart returns a new provider against the same emulator and cluster,
// as a restarted controller process builds: no cache, no record of what
// e.p launched.
func (e *env) restart() *awsprovider.Provider {
	e.t.Helper()
	p, err := awsprovider.New(e.ctx, e.cfg, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

var classSeq atomic.Int64

type envOptions struct {
	emu      awsemu.Options
	provider awsprovider.Options
}

// newEnv starts an emulator, builds a provider against it that reads node
// classes from the control plane, and creates a resolved EC2NodeClass.
// Every AWS call the emulator records is checked against the controller's
// IAM policy when the test ends.
func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	logs := &syncBuffer{}
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(logs, prefix, args) }, funcr.Options{Verbosity: 10})
	if o.emu.Seed == 0 {
		o.emu.Seed = 11
	}
	o.emu.Log = logger.WithName("emulator")
	emu, cfg := awstest.Start(t, o.emu)
	cfg.Logger = sdkLogger{logger.WithName("sdk")}
	cl, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	po := o.provider
	po.ClusterName = emu.Options().ClusterName
	po.Reader = cl
	po.Log = logger.WithName("provider")
	if po.Retry.MaxAttempts == 0 {
		po.Retry = awstest.Retry()
	}
	if po.BatchIdle == 0 {
		po.BatchIdle = 10 * time.Millisecond
	}
	p, err := awsprovider.New(ctx, cfg, po)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, emu: emu, p: p, client: cl, logs: logs, cfg: cfg, opts: po}
	t.Cleanup(e.checkCallsAllowed)
	t.Cleanup(e.checkIMDSv2)
	e.class = e.createClass(discoverySpec())
	return e
}

// sdkLogger adapts logr to the SDK's logging interface, so retry notices
// are captured too.
type sdkLogger struct{ l logr.Logger }

func (s sdkLogger) Logf(classification logging.Classification, format string, v ...any) {
	s.l.Info(fmt.Sprintf(format, v...), "classification", string(classification))
}

func discoverySpec() awsv1.EC2NodeClassSpec {
	disc := map[string]string{"karpenter.sh/discovery": awstest.ClusterName}
	return awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: disc}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       "KarpenterNodeRole-" + awstest.ClusterName,
	}
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// createClass stores a node class in the API server and resolves it the
// way the node class controller does.
func (e *env) createClass(spec awsv1.EC2NodeClassSpec) *awsv1.EC2NodeClass {
	e.t.Helper()
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(e.t.Name()), "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("%s-%d", name, classSeq.Add(1))
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := e.client.Create(e.ctx, nc); err != nil {
		e.t.Fatalf("creating EC2NodeClass: %v", err)
	}
	e.t.Cleanup(func() { _ = e.client.Delete(context.Background(), nc) })
	return e.resolve(nc)
}

// resolve re-resolves a class and writes its status.
func (e *env) resolve(nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	e.t.Helper()
	cur := &awsv1.EC2NodeClass{}
	if err := e.client.Get(e.ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
		e.t.Fatal(err)
	}
	resolved, err := e.p.Resolver().Resolve(e.ctx, cur)
	if err != nil {
		e.t.Fatalf("resolving %s: %v", nc.Name, err)
	}
	if err := e.client.Status().Update(e.ctx, resolved); err != nil {
		e.t.Fatalf("writing status of %s: %v", nc.Name, err)
	}
	return resolved
}

// updateSpec changes a class's spec, then re-resolves it.
func (e *env) updateSpec(nc *awsv1.EC2NodeClass, mutate func(*awsv1.EC2NodeClassSpec)) *awsv1.EC2NodeClass {
	e.t.Helper()
	cur := &awsv1.EC2NodeClass{}
	if err := e.client.Get(e.ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
		e.t.Fatal(err)
	}
	mutate(&cur.Spec)
	if err := e.client.Update(e.ctx, cur); err != nil {
		e.t.Fatal(err)
	}
	return e.resolve(cur)
}

var claimSeq atomic.Int64

// claim is a NodeClaim of pool "default" for the env's class.
func (e *env) claim(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return e.claimFor(e.class, "default", reqs...)
}

func (e *env) claimFor(nc *awsv1.EC2NodeClass, pool string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%d", pool, claimSeq.Add(1)),
			Labels: map[string]string{karpv1.NodePoolLabelKey: pool, "team": "b"},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements:  reqs,
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "b", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}},
			NodeClassRef:  &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resourceQuantity("1"), corev1.ResourcePods: resourceQuantity("5"),
			}},
		},
	}
}

func in(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// checkCallsAllowed evaluates every call the emulator recorded against the
// controller's IAM policies (conditions assumed satisfied; see package
// iampolicy). A launch with an instance profile also needs iam:PassRole on
// the node role.
func (e *env) checkCallsAllowed() {
	o := e.emu.Options()
	params := iampolicy.Params{Partition: "aws", Region: o.Region, AccountID: o.AccountID, ClusterName: o.ClusterName, NodeRoleName: "KarpenterNodeRole-" + o.ClusterName}
	var docs []iampolicy.Document
	for _, pol := range iampolicy.ControllerPolicies(params) {
		docs = append(docs, pol.Document)
	}
	if e.opts.RebootForRepair {
		docs = append(docs, iampolicy.RebootForRepairPolicy(params).Document)
	}
	seen := map[string]bool{}
	for _, c := range e.emu.Calls() {
		seen[c.Action] = true
	}
	if seen["ec2:CreateFleet"] {
		seen["iam:PassRole"] = true
	}
	for action := range seen {
		if e.testCalls[action] {
			continue
		}
		resources, ok := iampolicy.RequestResources(params, action)
		if !ok {
			e.t.Errorf("IAM: the provider called %s, which the policies do not cover (add it to iampolicy)", action)
			continue
		}
		for _, r := range resources {
			if d := iampolicy.Allows(docs, action, r); !d.Allowed {
				e.t.Errorf("IAM: %s on %s is not allowed by the controller policies", action, r)
			}
		}
	}
}

// checkIMDSv2 checks that every instance the test launched requires IMDSv2
// tokens with a hop limit of 1 (no test class changes the defaults).
func (e *env) checkIMDSv2() {
	for _, in := range e.emu.Instances() {
		if mo := in.MetadataOptions; mo.HTTPTokens != "required" || mo.HTTPPutResponseHopLimit != 1 {
			e.t.Errorf("instance %s launched with metadata options %+v; want IMDSv2 required, hop limit 1", in.ID, mo)
		}
	}
}

// instanceOf returns the emulator's record of an instance.
func (e *env) instanceOf(providerID string) awsemu.Instance {
	e.t.Helper()
	id, err := awsprovider.ParseProviderID(providerID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, in := range e.emu.Instances() {
		if in.ID == id {
			return in
		}
	}
	e.t.Fatalf("the emulator has no instance %s", id)
	return awsemu.Instance{}
}

// pollUntil polls cond until it holds or the deadline passes.
func pollUntil(t testing.TB, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	poll.Until(t, timeout, 5*time.Millisecond, what, cond)
}

// awsOptionsWithRecorder are provider options with an event recorder.
func awsOptionsWithRecorder(rec events.EventRecorder) awsprovider.Options {
	return awsprovider.Options{Recorder: rec}
}
