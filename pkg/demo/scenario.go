package demo

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// Namespace holds the demo's workload.
const Namespace = "demo"

//go:embed workload.yaml
var workloadYAML []byte

// Workload returns the sample workload's manifests (YAML documents).
func Workload() []byte { return append([]byte(nil), workloadYAML...) }

// ScaleUp is the replica count of each Deployment after the scale-up step.
var ScaleUp = map[string]int32{"web": 24, "api": 12, "reports": 6}

// ScaleDown is the replica count of each Deployment after the scale-down
// step (the workload's initial counts).
var ScaleDown = map[string]int32{"web": 6, "api": 4, "reports": 2}

// Driver is what the scenario acts through.
type Driver struct {
	// Client is an admin client of the cluster.
	Client client.Client
	// Interrupt sends a spot interruption for the node (through the AWS
	// emulator).
	Interrupt func(ctx context.Context, node string) error
	// Note reports a step (shown in the view's log).
	Note func(text string)
	// StepTimeout bounds each wait (10 minutes when zero).
	StepTimeout time.Duration
	// Poll is the wait's polling interval (500 ms when zero).
	Poll time.Duration
}

// Step names, in order, as notes report them.
const (
	StepDeploy    = "deploy"
	StepScaleUp   = "scale-up"
	StepInterrupt = "interrupt"
	StepScaleDown = "scale-down"
	StepDone      = "done"
)

// RunScenario drives the demo: deploy the sample workload and wait until
// every pod runs; scale it up and wait again; send a spot interruption for
// the spot node hosting the most demo pods and wait until that node is gone
// and every pod runs again; scale the workload back down and wait until
// consolidation has removed nodes (every pod Running, fewer nodes, a lower
// $/h, no disruption in progress), reporting the $/h saved. Each step is
// announced through Note, starting with the step name ("scale-up: ...").
func RunScenario(ctx context.Context, d Driver) error {
	if d.StepTimeout <= 0 {
		d.StepTimeout = 10 * time.Minute
	}
	if d.Poll <= 0 {
		d.Poll = 500 * time.Millisecond
	}
	note := func(format string, args ...any) {
		if d.Note != nil {
			d.Note(fmt.Sprintf(format, args...))
		}
	}
	note("%s: applying the sample workload (web arm64 zone-spread, api amd64, reports on team-b)", StepDeploy)
	if err := apply(ctx, d.Client, workloadYAML); err != nil {
		return fmt.Errorf("deploying the sample workload: %w", err)
	}
	if err := d.waitAllRunning(ctx, nil); err != nil {
		return err
	}
	note("%s: every demo pod is Running", StepDeploy)

	note("%s: scaling web to %d, api to %d, reports to %d", StepScaleUp, ScaleUp["web"], ScaleUp["api"], ScaleUp["reports"])
	if err := d.scale(ctx, ScaleUp); err != nil {
		return err
	}
	if err := d.waitAllRunning(ctx, nil); err != nil {
		return err
	}
	note("%s: every demo pod is Running", StepScaleUp)

	victim, pods, err := d.spotNode(ctx)
	if err != nil {
		return err
	}
	note("%s: spot interruption for node %s (%d demo pods)", StepInterrupt, victim, pods)
	if err := d.Interrupt(ctx, victim); err != nil {
		return fmt.Errorf("interrupting %s: %w", victim, err)
	}
	gone := func() (bool, error) {
		err := d.Client.Get(ctx, client.ObjectKey{Name: victim}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	if err := d.waitAllRunning(ctx, gone); err != nil {
		return err
	}
	note("%s: node %s is gone and every demo pod is Running again", StepInterrupt, victim)

	peak, err := Collect(ctx, d.Client, time.Now())
	if err != nil {
		return err
	}
	note("%s: scaling web to %d, api to %d, reports to %d; consolidation removes the nodes left idle or underused (after the pools' consolidateAfter)",
		StepScaleDown, ScaleDown["web"], ScaleDown["api"], ScaleDown["reports"])
	if err := d.scale(ctx, ScaleDown); err != nil {
		return err
	}
	var now Sample
	shrunk := func() (bool, error) {
		var err error
		if now, err = Collect(ctx, d.Client, time.Now()); err != nil {
			return false, err
		}
		busy, err := d.disrupting(ctx)
		if err != nil || busy {
			return false, err
		}
		return now.Nodes() < peak.Nodes() && now.Launching == 0 && now.PricePerHour < peak.PricePerHour, nil
	}
	if err := d.waitAllRunning(ctx, shrunk); err != nil {
		return err
	}
	note("%s: %d -> %d nodes, $%.4f/h -> $%.4f/h: consolidation saves $%.4f/h ($%.0f/month)", StepScaleDown,
		peak.Nodes(), now.Nodes(), peak.PricePerHour, now.PricePerHour, peak.PricePerHour-now.PricePerHour, 730*(peak.PricePerHour-now.PricePerHour))
	note("%s: scenario complete", StepDone)
	return nil
}

// scale sets the replica counts of the demo's Deployments.
func (d Driver) scale(ctx context.Context, replicas map[string]int32) error {
	names := make([]string, 0, len(replicas))
	for name := range replicas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		dep := &appsv1.Deployment{}
		if err := d.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, dep); err != nil {
			return err
		}
		patch := client.MergeFrom(dep.DeepCopy())
		n := replicas[name]
		dep.Spec.Replicas = &n
		if err := d.Client.Patch(ctx, dep, patch); err != nil {
			return fmt.Errorf("scaling %s: %w", name, err)
		}
	}
	return nil
}

// disrupting reports whether a disruption is in progress: a NodeClaim
// being deleted or a node tainted karpenter.sh/disrupted.
func (d Driver) disrupting(ctx context.Context) (bool, error) {
	var ncs karpv1.NodeClaimList
	if err := d.Client.List(ctx, &ncs); err != nil {
		return false, err
	}
	for _, nc := range ncs.Items {
		if nc.DeletionTimestamp != nil {
			return true, nil
		}
	}
	var nodes corev1.NodeList
	if err := d.Client.List(ctx, &nodes); err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			if t.Key == karpv1.DisruptedTaintKey {
				return true, nil
			}
		}
	}
	return false, nil
}

// waitAllRunning waits until every Deployment of the demo has all its
// replicas Running and extra (if any) holds.
func (d Driver) waitAllRunning(ctx context.Context, extra func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d.StepTimeout)
	defer cancel()
	t := time.NewTicker(d.Poll)
	defer t.Stop()
	var last error
	for {
		ok, err := d.allRunning(ctx)
		if ok && err == nil && extra != nil {
			ok, err = extra()
		}
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("waiting for every demo pod to run: %w", last)
		case <-t.C:
		}
	}
}

func (d Driver) allRunning(ctx context.Context) (bool, error) {
	var deps appsv1.DeploymentList
	if err := d.Client.List(ctx, &deps, client.InNamespace(Namespace)); err != nil {
		return false, err
	}
	want := 0
	for _, dep := range deps.Items {
		if dep.Spec.Replicas != nil {
			want += int(*dep.Spec.Replicas)
		}
	}
	var pods corev1.PodList
	if err := d.Client.List(ctx, &pods, client.InNamespace(Namespace)); err != nil {
		return false, err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	return want > 0 && running == want, nil
}

// spotNode picks the spot node running the most demo pods (ties: by name).
func (d Driver) spotNode(ctx context.Context) (string, int, error) {
	var nodes corev1.NodeList
	if err := d.Client.List(ctx, &nodes, client.MatchingLabels{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeSpot}); err != nil {
		return "", 0, err
	}
	spot := map[string]bool{}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp == nil {
			spot[n.Name] = true
		}
	}
	var pods corev1.PodList
	if err := d.Client.List(ctx, &pods, client.InNamespace(Namespace)); err != nil {
		return "", 0, err
	}
	count := map[string]int{}
	for _, p := range pods.Items {
		if spot[p.Spec.NodeName] {
			count[p.Spec.NodeName]++
		}
	}
	best, most := "", 0
	for n, c := range count {
		if c > most || (c == most && n < best) {
			best, most = n, c
		}
	}
	if best == "" {
		return "", 0, errors.New("no spot node runs a demo pod")
	}
	return best, most, nil
}

// apply creates the objects of a multi-document YAML, leaving those that
// exist alone.
func apply(ctx context.Context, c client.Client, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 1; ; i++ {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}
