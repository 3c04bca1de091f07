package interruption_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
	nodetermination "github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/queue"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Scheduler: true, Kwok: true}, &cp))
}

type fixture struct {
	t   *testing.T
	env *controllerstest.Env
	emu *awsemu.Emulator
	sqs *sqs.Client
	m   *interruption.Metrics
	ns  string
}

// setup runs provisioning, the NodeClaim lifecycle, termination and the
// interruption controller with the fake cloud, and the emulator's SQS queue
// as the interruption queue (messages are sent to it through the SDK).
func setup(t *testing.T) *fixture { return setupWith(t, nil) }

// setupWith is setup with the controller also polling scheduled events
// from src (when not nil).
func setupWith(t *testing.T, src cloudprovider.ScheduledEvents) *fixture {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	emu, err := awsemu.Start(ctx, awsemu.Options{ClusterName: "test", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	client := sqs.NewFromConfig(emu.AWSConfig())

	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	pm, err := provisioning.NewMetrics(env.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	prov := provisioning.New(kube, env.Cloud, env.Clock, env.Recorder(), pm, env.Unavailable, provisioning.Options{})
	im, err := interruption.NewMetrics(env.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	q := queue.New(client, "test", queue.Options{WaitSeconds: 1})
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Start(
		prov,
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable,
			lifecycle.Options{LaunchTimeout: 24 * time.Hour, RegistrationTimeout: 24 * time.Hour}),
		nctermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		nodetermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, nodetermination.Options{}),
		interruption.New(kube, q.Events(), prov, env.Clock, env.Recorder(), im, env.Unavailable).
			WithScheduledEvents(interruption.ScheduledEventsOptions{Source: src}),
	)
	env.StartKubelet(controllerstest.KubeletOptions{})
	return &fixture{t: t, env: env, emu: emu, sqs: client, m: im, ns: env.Namespace()}
}

func (f *fixture) readyPool(np *karpv1.NodePool) {
	f.t.Helper()
	f.env.Create(np)
	now := time.Now()
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
	if err := f.env.Client.Status().Update(f.env.Context(), np); err != nil {
		f.t.Fatal(err)
	}
}

// spotPool allows spot only, so every node is a spot node.
func spotPool(name string) *karpv1.NodePool {
	np := controllerstest.NodePool(name)
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey {
			np.Spec.Template.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeSpot}
		}
	}
	return np
}

// deploy creates a ReplicaSet whose pods need their own node each (hostname
// anti-affinity), and waits until they run.
func (f *fixture) deploy(name string, replicas int32) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
					}}},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: corev1.LabelHostname,
						}},
					}},
				},
			},
		},
	}
	f.env.Create(rs)
	f.waitRunning(name, int(replicas), nil)
	// Replace reads bound pods and NodeClaims from the manager's cache:
	// wait until it sees the pods on their nodes and the NodeClaims
	// registered, or an interruption right now finds nothing to move.
	f.env.Eventually("the cache to see "+name+"'s pods on their nodes", func() (bool, error) {
		var pods corev1.PodList
		if err := f.env.Manager.GetClient().List(f.env.Context(), &pods, client.InNamespace(f.ns), client.MatchingLabels{"app": name}); err != nil {
			return false, err
		}
		bound := map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound[p.Spec.NodeName] = true
			}
		}
		var claims karpv1.NodeClaimList
		if err := f.env.Manager.GetClient().List(f.env.Context(), &claims); err != nil {
			return false, err
		}
		registered := 0
		for _, nc := range claims.Items {
			if bound[nc.Status.NodeName] {
				registered++
			}
		}
		if registered < len(bound) || len(bound) == 0 {
			return false, fmt.Errorf("%d nodes with pods, %d of their NodeClaims registered in the cache", len(bound), registered)
		}
		return true, nil
	})
}

// waitRunning waits until want pods of the app run, none on the excluded
// node, stepping the fake clock so batch windows close.
func (f *fixture) waitRunning(app string, want int, check func() error) {
	f.t.Helper()
	f.env.Eventually(fmt.Sprintf("%d %s pods Running", want, app), func() (bool, error) {
		f.env.Clock.Step(time.Second)
		if check != nil {
			if err := check(); err != nil {
				f.t.Fatal(err)
			}
		}
		running := 0
		var pods corev1.PodList
		if err := f.env.Client.List(f.env.Context(), &pods, client.InNamespace(f.ns), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		if running != want {
			return false, fmt.Errorf("%d running", running)
		}
		return true, nil
	})
}

func (f *fixture) claims() []karpv1.NodeClaim {
	var list karpv1.NodeClaimList
	if err := f.env.Client.List(f.env.Context(), &list); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// send puts an EventBridge event about the instance on the queue.
func (f *fixture) send(source, detailType, instanceID string, detail map[string]string) {
	f.t.Helper()
	body, err := json.Marshal(map[string]any{
		"version": "0", "id": fmt.Sprintf("ev-%d", time.Now().UnixNano()), "detail-type": detailType, "source": source,
		"account": awsemu.DefaultAccountID, "time": time.Now().UTC().Format(time.RFC3339), "region": "us-east-1",
		"resources": []string{"arn:aws:ec2:us-east-1:" + awsemu.DefaultAccountID + ":instance/" + instanceID}, "detail": detail,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	url, err := f.sqs.GetQueueUrl(f.env.Context(), &sqs.GetQueueUrlInput{QueueName: ptr.To("test")})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.sqs.SendMessage(f.env.Context(), &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: ptr.To(string(body))}); err != nil {
		f.t.Fatal(err)
	}
}

// describe names NodeClaims with what explains them, for failures.
func describe(ncs []karpv1.NodeClaim) string {
	var out []string
	for _, nc := range ncs {
		out = append(out, fmt.Sprintf("%s (pool %s, reason %q, node %q, created %s, deleting %v)", nc.Name, nc.Labels[karpv1.NodePoolLabelKey],
			nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey], nc.Status.NodeName, nc.CreationTimestamp.Format(time.RFC3339), nc.DeletionTimestamp != nil))
	}
	return strings.Join(out, "; ")
}

func instanceID(nc *karpv1.NodeClaim) string { return path.Base(nc.Status.ProviderID) }

func TestSpotInterruptionReplacesThenDrains(t *testing.T) {
	f := setup(t)
	f.readyPool(spotPool("spot"))
	f.deploy("web", 2)
	before := f.claims()
	if len(before) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (one per pod): %s", len(before), describe(before))
	}
	victim := before[0]
	offering := cloudprovider.OfferingKey{InstanceType: victim.Labels[corev1.LabelInstanceTypeStable], Zone: victim.Labels[corev1.LabelTopologyZone], CapacityType: karpv1.CapacityTypeSpot}

	f.send("aws.ec2", "EC2 Spot Instance Interruption Warning", instanceID(&victim), map[string]string{"instance-id": instanceID(&victim), "instance-action": "terminate"})

	// The replacement must exist before the victim's pods are evicted.
	f.env.Eventually("the victim NodeClaim deleted", func() (bool, error) {
		nc := &karpv1.NodeClaim{}
		err := f.env.Client.Get(f.env.Context(), client.ObjectKey{Name: victim.Name}, nc)
		return client.IgnoreNotFound(err) == nil && (err != nil || nc.DeletionTimestamp != nil), nil
	})
	var replacement *karpv1.NodeClaim
	for _, nc := range f.claims() {
		if nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey] == provisioning.ReasonInterruption {
			replacement = &nc
		}
	}
	if replacement == nil {
		t.Fatal("no replacement NodeClaim with creation reason interruption")
	}
	if !f.env.Unavailable.IsUnavailable(offering) {
		t.Errorf("the interrupted spot offering %s is not marked unavailable", offering)
	}
	f.waitRunning("web", 2, nil)
	f.env.Eventually("the victim's instance gone", func() (bool, error) {
		for _, inst := range f.env.Cloud.Instances() {
			if inst.Status.ProviderID == victim.Status.ProviderID {
				return false, nil
			}
		}
		return true, nil
	})
	f.env.EventuallyEvent("NodeClaim", victim.Name, interruption.ReasonSpotInterrupted)
	f.env.Eventually("the message deleted", func() (bool, error) {
		return metricstest.Value(t, f.m.Deleted) == 1, nil
	})
	if v := metricstest.Value(t, f.m.Received.WithLabelValues(interruption.TypeSpotInterrupted)); v != 1 {
		t.Errorf("received spot_interrupted = %v, want 1", v)
	}
}

func TestRebalanceReplacementReadyBeforeCordon(t *testing.T) {
	f := setup(t)
	np := spotPool("opted-in")
	np.Annotations = map[string]string{interruption.RebalanceAnnotationKey: interruption.RebalanceReplace}
	f.readyPool(np)
	f.deploy("web", 1)
	before := f.claims()
	if len(before) != 1 {
		t.Fatalf("%d NodeClaims, want 1: %s", len(before), describe(before))
	}
	old := before[0]
	f.send("aws.ec2", "EC2 Instance Rebalance Recommendation", instanceID(&old), map[string]string{"instance-id": instanceID(&old)})

	// Until the old node is cordoned, watch that its replacement is not
	// initialized later than that. The node is read first, then the
	// NodeClaims: a replacement initialized and a cordon both between two
	// reads in the other order would look like a cordon first.
	var replacementReadyAt time.Time
	f.env.Eventually("the old node cordoned", func() (bool, error) {
		f.env.Clock.Step(time.Second)
		node := &corev1.Node{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKey{Name: old.Status.NodeName}, node); err != nil {
			return client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
		}
		for _, nc := range f.claims() {
			if nc.Name != old.Name && nc.IsTrue(karpv1.ConditionTypeInitialized) && replacementReadyAt.IsZero() {
				replacementReadyAt = time.Now()
			}
		}
		if node.Spec.Unschedulable {
			if replacementReadyAt.IsZero() {
				for _, nc := range f.claims() {
					t.Logf("claim %s annotations %v conditions %v", nc.Name, nc.Annotations, nc.Status.Conditions)
				}
				t.Fatal("the old node was cordoned before its replacement was initialized")
			}
			return true, nil
		}
		return false, nil
	})
	f.env.Eventually("the old NodeClaim gone", func() (bool, error) {
		return f.env.NotFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old.Name}})
	})
	f.waitRunning("web", 1, nil)
	f.env.EventuallyEvent("NodeClaim", old.Name, interruption.ReasonRebalanced)
}

func TestRebalanceWithoutOptInOnlyRecords(t *testing.T) {
	f := setup(t)
	f.readyPool(spotPool("plain"))
	f.deploy("web", 1)
	old := f.claims()[0]
	f.send("aws.ec2", "EC2 Instance Rebalance Recommendation", instanceID(&old), map[string]string{"instance-id": instanceID(&old)})
	f.env.EventuallyEvent("NodeClaim", old.Name, interruption.ReasonRebalanceRecommendation)
	f.env.Eventually("the message deleted", func() (bool, error) {
		return metricstest.Value(t, f.m.Deleted) == 1, nil
	})
	if n := len(f.claims()); n != 1 {
		t.Errorf("%d NodeClaims after a recorded recommendation, want 1", n)
	}
	nc := &karpv1.NodeClaim{}
	if err := f.env.Client.Get(f.env.Context(), client.ObjectKey{Name: old.Name}, nc); err != nil || nc.DeletionTimestamp != nil {
		t.Errorf("the NodeClaim was disrupted (err %v)", err)
	}
}

func TestMalformedAndForeignMessagesAreDeleted(t *testing.T) {
	f := setup(t)
	url, err := f.sqs.GetQueueUrl(f.env.Context(), &sqs.GetQueueUrlInput{QueueName: ptr.To("test")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sqs.SendMessage(f.env.Context(), &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: ptr.To("not json")}); err != nil {
		t.Fatal(err)
	}
	f.send("aws.ec2", "EC2 Instance State-change Notification", "i-0123456789abcdef0", map[string]string{"instance-id": "i-0123456789abcdef0", "state": "terminated"})
	f.env.Eventually("both messages deleted", func() (bool, error) {
		return metricstest.Value(t, f.m.Deleted) == 2, nil
	})
	for typ, want := range map[string]float64{interruption.TypeMalformed: 1, interruption.TypeInstanceTerminated: 1} {
		if v := metricstest.Value(t, f.m.Received.WithLabelValues(typ)); v != want {
			t.Errorf("received %s = %v, want %v", typ, v, want)
		}
	}
	if n := metricstest.Count(f.m.Actions); n != 0 {
		t.Errorf("%d actions taken on messages about no NodeClaim", n)
	}
}

// scheduledEvents is an in-memory cloudprovider.ScheduledEvents: what the
// cloud reports as scheduled, and how often it was asked.
type scheduledEvents struct {
	mu    sync.Mutex
	evs   []cloudprovider.InterruptionEvent
	polls int
}

func (s *scheduledEvents) ScheduledEvents(context.Context) ([]cloudprovider.InterruptionEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls++
	return slices.Clone(s.evs), nil
}

func (s *scheduledEvents) set(evs ...cloudprovider.InterruptionEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = evs
}

func (s *scheduledEvents) polled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

// A scheduled retirement of an owned instance, reported by the cloud's
// scheduled events rather than the queue, replaces the node before it is
// drained, once, however many polls report it again; one of an instance
// no NodeClaim owns changes nothing.
func TestScheduledRetirementReplacesThenDrains(t *testing.T) {
	src := &scheduledEvents{}
	f := setupWith(t, src)
	f.readyPool(controllerstest.NodePool("default"))
	f.deploy("web", 2)
	before := f.claims()
	if len(before) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (one per pod): %s", len(before), describe(before))
	}
	victim := before[0]
	src.set(
		cloudprovider.InterruptionEvent{ID: "instance-event-1", Kind: cloudprovider.InterruptionScheduledChange, State: "instance-retirement",
			NotBefore: f.env.Clock.Now().Add(24 * time.Hour), InstanceIDs: []string{instanceID(&victim)}},
		cloudprovider.InterruptionEvent{ID: "instance-event-2", Kind: cloudprovider.InterruptionScheduledChange, State: "instance-stop",
			NotBefore: f.env.Clock.Now().Add(24 * time.Hour), InstanceIDs: []string{"i-0fffffffffffffff0"}},
	)
	// Replacement first: while the victim's node is not cordoned yet, no
	// replacement may be missing once it is.
	f.env.Eventually("the victim's node cordoned", func() (bool, error) {
		f.env.Clock.Step(time.Minute) // the next poll
		node := &corev1.Node{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKey{Name: victim.Status.NodeName}, node); err != nil {
			return client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
		}
		if !node.Spec.Unschedulable {
			return false, nil
		}
		for _, nc := range f.claims() {
			if nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey] == provisioning.ReasonInterruption {
				return true, nil
			}
		}
		t.Fatal("the victim's node was cordoned with no replacement NodeClaim")
		return false, nil
	})
	f.env.Eventually("the victim NodeClaim gone", func() (bool, error) {
		return f.env.NotFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name}})
	})
	f.waitRunning("web", 2, nil)
	f.env.EventuallyEvent("NodeClaim", victim.Name, interruption.ReasonScheduledChange)
	// More polls report the same event: nothing more is done.
	polls := src.polled()
	f.env.Eventually("three more polls", func() (bool, error) {
		f.env.Clock.Step(time.Minute)
		return src.polled() >= polls+3, nil
	})
	if v := metricstest.Value(t, f.m.Actions.WithLabelValues("replace")); v != 1 {
		t.Errorf("replace actions = %v, want 1 (one owned instance, reported %d times)", v, src.polled())
	}
	if n := len(f.claims()); n != 2 {
		t.Errorf("%d NodeClaims after the retirement, want 2: %s", n, describe(f.claims()))
	}
}

// A Capacity Block's expiration, reported by the cloud's scheduled
// events 40 minutes before the block ends (NotBefore: when the cloud
// starts terminating its instances), replaces the block's node and
// drains it before NotBefore.
func TestCapacityBlockExpirationReplacesBeforeTheEnd(t *testing.T) {
	src := &scheduledEvents{}
	f := setupWith(t, src)
	f.readyPool(controllerstest.NodePool("default"))
	f.deploy("web", 2)
	before := f.claims()
	if len(before) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (one per pod): %s", len(before), describe(before))
	}
	victim := before[0]
	reclaim := f.env.Clock.Now().Add(30 * time.Minute)
	src.set(cloudprovider.InterruptionEvent{ID: "capacity-block-expiration/cr-0123456789abcdef0", Kind: cloudprovider.InterruptionScheduledChange,
		State: "capacity-block-expiring", NotBefore: reclaim, InstanceIDs: []string{instanceID(&victim)}})
	polls := src.polled()
	f.env.Eventually("a replacement NodeClaim and the victim gone", func() (bool, error) {
		if !f.env.Clock.Now().Before(reclaim) {
			t.Fatalf("the block's reclaim came (%v) before its node was replaced: %s", reclaim, describe(f.claims()))
		}
		if src.polled() <= polls {
			f.env.Clock.Step(time.Minute) // the next poll; the rest needs no time to pass
		}
		replaced := false
		for _, nc := range f.claims() {
			replaced = replaced || nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey] == provisioning.ReasonInterruption
		}
		gone, err := f.env.NotFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name}})
		return replaced && gone, err
	})
	f.waitRunning("web", 2, nil)
	f.env.EventuallyEvent("NodeClaim", victim.Name, interruption.ReasonScheduledChange)
}
