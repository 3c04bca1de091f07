package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The placement gate (see the package doc and docs/disruption.md).
const (
	// GateName is the scheduling gate the placement policy adds to a new
	// pod of an owner an in-flight command is recreating. The controller
	// writes the pod's nomination, then removes the gate; the
	// kube-scheduler does not look at the pod before.
	GateName = "dovetail.sh/disruption-placement"
	// PlacementName names the MutatingAdmissionPolicy and its binding.
	PlacementName = "dovetail-disruption-placement"
	// CommandsAnnotationKey on the policy lists the commands whose owners
	// it gates (for people; the policy reads only its expression).
	CommandsAnnotationKey = "dovetail.sh/disruption-commands"
	// fieldOwner is the server-side apply field manager of those objects.
	fieldOwner = "dovetail-disruption"
	// installRetry is how long an install that failed (no
	// MutatingAdmissionPolicy API, or not allowed) waits before the next
	// try; meanwhile nothing is gated.
	installRetry = 5 * time.Minute
	// gateSettle is how long after the owners of a command were written
	// into the policy its candidates wait before they are deleted: the API
	// server takes a changed policy in within about a second.
	gateSettle = 2 * time.Second
)

// placementPolicy is the MutatingAdmissionPolicy: on Pod CREATE, an unbound
// pod whose controller (ownerReference with controller: true) is one of
// owners gets GateName. The owners are written into the expression (a
// param object would need the controller to read every object of its kind
// cluster-wide). failurePolicy Ignore: an error never fails a pod's
// creation.
func placementPolicy(owners map[string]string) *admissionv1.MutatingAdmissionPolicy {
	uids := make([]string, 0, len(owners))
	ids := map[string]bool{}
	for o, cmds := range owners {
		uids = append(uids, strconv.Quote(o))
		for _, id := range strings.Split(cmds, ",") {
			ids[id] = true
		}
	}
	sort.Strings(uids)
	commands := make([]string, 0, len(ids))
	for id := range ids {
		commands = append(commands, id)
	}
	sort.Strings(commands)
	owned := "false"
	if len(uids) > 0 {
		owned = `has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.uid in [` +
			strings.Join(uids, ", ") + `])`
	}
	return &admissionv1.MutatingAdmissionPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PlacementName, Labels: map[string]string{"app.kubernetes.io/name": "dovetail"},
			Annotations: map[string]string{CommandsAnnotationKey: strings.Join(commands, ",")}},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{
				// A pod created bound (nodeName set) may not carry a gate.
				{Name: "unbound", Expression: `!has(object.spec.nodeName) || object.spec.nodeName == ""`},
				{Name: "owner-in-a-command", Expression: owned},
			},
			Mutations: []admissionv1.Mutation{{
				PatchType: admissionv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionv1.ApplyConfiguration{
					Expression: fmt.Sprintf(`Object{spec: Object.spec{schedulingGates: [Object.spec.schedulingGates{name: %q}]}}`, GateName),
				},
			}},
			FailurePolicy:      ptr.To(admissionv1.Ignore),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
}

// placementBinding binds the policy (to every namespace).
func placementBinding() *admissionv1.MutatingAdmissionPolicyBinding {
	return &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: PlacementName, Labels: map[string]string{"app.kubernetes.io/name": "dovetail"}},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: PlacementName},
	}
}

// gate keeps the policy installed with the owners of the commands in
// flight.
type gate struct {
	on bool
	mu sync.Mutex
	// installed: the binding was applied by this process, and the policy
	// with it.
	installed bool
	lastTry   time.Time
	// off is why gating is off ("" when on or not tried yet).
	off string
	// written is what the policy was last set to (owner -> command ids);
	// nil until the first write of this process. since is when each owner
	// was first written into it.
	written map[string]string
	since   map[string]time.Time
}

// enabled reports whether pods are being gated.
func (g *gate) enabled() bool {
	if g == nil || !g.on {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.installed
}

// ensure applies the policy (holding owners) and its binding, by
// server-side apply (idempotent; a newer controller updates them), at
// start and again every installRetry (so a deleted policy comes back). A
// failure turns gating off and says why once per try; the nominations go
// on without the gate.
func (g *gate) ensure(ctx context.Context, kube client.Client, owners map[string]string, now time.Time) {
	if g == nil || !g.on {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.lastTry.IsZero() && now.Sub(g.lastTry) < installRetry {
		return
	}
	first := !g.installed
	g.lastTry = now
	err := g.apply(ctx, kube, owners, now)
	if err == nil {
		//nolint:staticcheck // typed apply of a built-in type
		if err = kube.Patch(ctx, placementBinding(), client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			err = fmt.Errorf("applying MutatingAdmissionPolicyBinding %s: %w", PlacementName, err)
		}
	}
	if err != nil {
		why := err.Error()
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			why = "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: " + why
		}
		g.off, g.installed = why, false
		g.written = nil
		log.FromContext(ctx).Error(err, "disruption placement gate off: recreated pods are nominated without a scheduling gate "+
			"(the kube-scheduler may place them before their nomination); retrying later", "retryIn", installRetry.String())
		return
	}
	g.installed, g.off = true, ""
	if !first {
		return
	}
	log.FromContext(ctx).Info("disruption placement gate installed", "policy", PlacementName, "gate", GateName, "owners", len(owners))
}

// apply writes the policy with owners. Called with g.mu held.
func (g *gate) apply(ctx context.Context, kube client.Client, owners map[string]string, now time.Time) error {
	//nolint:staticcheck // typed apply of a built-in type
	if err := kube.Patch(ctx, placementPolicy(owners), client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying MutatingAdmissionPolicy %s: %w", PlacementName, err)
	}
	since := make(map[string]time.Time, len(owners))
	for o := range owners {
		if t, ok := g.since[o]; ok && g.written != nil {
			since[o] = t
		} else {
			since[o] = now
		}
	}
	g.written, g.since = make(map[string]string, len(owners)), since
	for k, v := range owners {
		g.written[k] = v
	}
	return nil
}

// sync sets the policy's owners (UID -> command ids) when they changed.
func (g *gate) sync(ctx context.Context, kube client.Client, owners map[string]string, now time.Time) error {
	if g == nil || !g.on {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.installed || (g.written != nil && mapsEqual(g.written, owners)) {
		return nil
	}
	if err := g.apply(ctx, kube, owners, now); err != nil {
		return fmt.Errorf("the placement gate's owners: %w", err)
	}
	return nil
}

// settling reports whether one of owners went into the policy less than
// gateSettle ago (the API server may not gate its pods yet).
func (g *gate) settling(owners []types.UID, now time.Time) bool {
	if !g.enabled() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range owners {
		if t, ok := g.since[string(o)]; ok && now.Sub(t) < gateSettle {
			return true
		}
	}
	return false
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// gateOwners are the owners to gate: those of the destinations, each with
// the ids of the commands over it.
func gateOwners(byCommand map[string]map[types.UID]bool) map[string]string {
	ids := map[string][]string{}
	for id, owners := range byCommand {
		for o := range owners {
			ids[string(o)] = append(ids[string(o)], id)
		}
	}
	out := make(map[string]string, len(ids))
	for o, l := range ids {
		sort.Strings(l)
		out[o] = strings.Join(l, ",")
	}
	return out
}

// gateIndex is the index of GateName in the pod's scheduling gates, -1
// when it has none.
func gateIndex(pod *corev1.Pod) int {
	return slices.IndexFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == GateName })
}

// ungate removes GateName from a pod: a JSON patch that first tests the
// gate is still at that index (so no other gate is ever removed). removed
// is true when this patch removed it. A pod gone, or whose gate moved or
// is already gone, is no error (the next round looks again).
func ungate(ctx context.Context, kube client.Client, pod *corev1.Pod) (removed bool, err error) {
	i := gateIndex(pod)
	if i < 0 {
		return false, nil
	}
	ops := []map[string]any{
		{"op": "test", "path": fmt.Sprintf("/spec/schedulingGates/%d/name", i), "value": GateName},
		{"op": "remove", "path": fmt.Sprintf("/spec/schedulingGates/%d", i)},
	}
	raw, _ := json.Marshal(ops)
	target := &corev1.Pod{}
	target.Namespace, target.Name = pod.Namespace, pod.Name
	err = kube.Patch(ctx, target, client.RawPatch(types.JSONPatchType, raw))
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		// Gone, or the test failed: the gate moved or is gone (another
		// writer, or an earlier patch of ours the cache does not show yet).
		return false, nil
	}
	return false, fmt.Errorf("removing the scheduling gate of pod %s/%s: %w", pod.Namespace, pod.Name, err)
}
