package disruption

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// Where a command lives in the cluster.
const (
	// CommandAnnotationKey on a candidate NodeClaim holds its command
	// (commandState as JSON) while the command runs.
	CommandAnnotationKey = nodeclaimutil.DisruptionCommandAnnotationKey
	// CommandLabelKey on a replacement NodeClaim is its command's id.
	CommandLabelKey = "dovetail.sh/disruption-command"
	// HoldTaintKey (effect PreferNoSchedule, value the command id) is put
	// on a command's replacement Nodes just before its candidates are
	// deleted, and lifted once every candidate NodeClaim is gone. The
	// kube-scheduler scores fresh, empty nodes highest (LeastAllocated),
	// so without it the evicted pods fill the replacements first, the
	// pods the plan meant for the replacements no longer fit there, and
	// provisioning launches nodes the plan did not want. An untolerated
	// PreferNoSchedule taint outweighs those scores (TaintToleration has
	// the largest default weight), so the pods go to existing nodes with
	// room first, as the plan placed them, and the rest to the
	// replacements. It never keeps a pod from a replacement.
	HoldTaintKey = "dovetail.sh/disruption-replacement"
)

// Event reasons (the peer's, where the meaning is the same).
const (
	ReasonDisruptionLaunching        = "DisruptionLaunching"
	ReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	ReasonDisruptionTerminating      = "DisruptionTerminating"
	ReasonDisruptionBlocked          = "DisruptionBlocked"
	ReasonUnconsolidatable           = "Unconsolidatable"
	// ReasonInvalidMinSavings: a NodePool's consolidation savings
	// annotation does not parse (Warning on the NodePool, once per value);
	// the controller's value is used.
	ReasonInvalidMinSavings          = "InvalidConsolidationMinSavings"
	ConditionReasonCommandRolledBack = "CommandRolledBack"
	rollbackReplacementFailed        = "a replacement failed to launch, register or initialize"
	rollbackTimeout                  = "timed out waiting for the replacements"
	decisionDelete, decisionReplace  = "delete", "replace"
	decisionTerminateFirst           = "terminate-first"
)

// commandState is a command as it is kept on its candidates.
type commandState struct {
	ID                string    `json:"id"`
	Reason            string    `json:"reason"`
	ConsolidationType string    `json:"consolidationType,omitempty"`
	Started           time.Time `json:"started"`
	NodeClaims        []string  `json:"nodeClaims"`
	Replacements      []string  `json:"replacements,omitempty"`
	SavingsPerHour    float64   `json:"savingsPerHour"`
	Message           string    `json:"message,omitempty"`
	// TerminationGracePeriod (repair) bounds the candidates' drain: their
	// karpenter.sh/nodeclaim-termination-timestamp is set to the deletion
	// time plus it.
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// Destinations are where the evicted pods were planned, by owner
	// (see nominator).
	Destinations snapshot.Destinations `json:"destinations,omitempty"`
}

func commandID(cmd planner.Command, now time.Time) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%d", cmd.Reason, strings.Join(cmd.Nodes, ","), now.UnixNano())
	return fmt.Sprintf("%010x", h.Sum64())[:10]
}

// plan calls the planner and reports what it found.
func (c *Controller) plan(ctx context.Context, st *state, now time.Time) (*planner.Plan, error) {
	in, w, err := c.input(ctx, st, now)
	if err != nil {
		return nil, err
	}
	in.Options.SkipLowerBound = true
	c.bound.offer(ctx, in, w, now, c.opts.LowerBoundInterval)
	begin := time.Now() // wall time of the computation, for the metric only
	plan, err := planner.Compute(in)
	c.metrics.DisruptionEvaluationDuration.Observe(time.Since(begin).Seconds())
	if err != nil {
		return nil, err
	}
	c.world = w
	c.metrics.FleetPricePerHour.Set(plan.FleetPricePerHour)
	eligible := map[planner.Reason]int{}
	for _, cmd := range plan.Commands {
		eligible[cmd.Reason] += len(cmd.Nodes)
	}
	for _, r := range []planner.Reason{planner.ReasonEmpty, planner.ReasonDrifted, planner.ReasonUnderutilized, planner.ReasonUnhealthy} {
		c.metrics.DisruptionEligibleNodes.WithLabelValues(strings.ToLower(string(r))).Set(float64(eligible[r]))
	}
	for pool, m := range plan.Allowed {
		for r, n := range m {
			c.metrics.NodePoolAllowedDisruptions.WithLabelValues(pool, strings.ToLower(string(r))).Set(float64(n))
		}
	}
	c.reportKept(st, plan)
	codes := map[planner.Code]int{}
	for _, k := range plan.Kept {
		codes[k.Code]++
	}
	summary := fmt.Sprintf("%d commands, kept %v", len(plan.Commands), codes)
	if summary != c.lastSummary {
		c.lastSummary = summary
		log.FromContext(ctx).Info("disruption plan", "commands", len(plan.Commands), "kept", codes,
			"fleetPricePerHour", plan.FleetPricePerHour, "fleetPricePerHourAfter", plan.FleetPricePerHourAfter,
			"evaluation", time.Since(begin).Round(time.Millisecond).String())
	}
	return plan, nil
}

// Codes that mean "blocked" (DisruptionBlocked) and "consolidation found
// nothing better" (Unconsolidatable); other kept codes make no event.
var (
	blockedCodes = []planner.Code{planner.CodeNodeDoNotDisrupt, planner.CodePodDoNotDisrupt, planner.CodePDB,
		planner.CodeBudget, planner.CodeNominated, planner.CodeDriftBlocked, planner.CodeRepairBreaker, planner.CodeRepairBlocked, planner.CodeDoNotRepair,
		planner.CodeBufferRoom}
	unconsolidatableCodes = []planner.Code{planner.CodeCannotReschedule, planner.CodeNoCheaper, planner.CodeSpotToSpotDisabled,
		planner.CodeSpotToSpotTypes, planner.CodeMinValues, planner.CodeBalanced, planner.CodeMinSavings, planner.CodeUnknownPrice, planner.CodeWhenEmpty,
		planner.CodeRecentReplacement}
)

// reportKept emits an event for a kept node whose code changed since the
// last pass.
func (c *Controller) reportKept(st *state, plan *planner.Plan) {
	seen := map[string]bool{}
	for _, k := range plan.Kept {
		seen[k.Node] = true
		if c.lastCode[k.Node] == k.Code {
			continue
		}
		c.lastCode[k.Node] = k.Code
		reason := ""
		switch {
		case slices.Contains(blockedCodes, k.Code):
			reason = ReasonDisruptionBlocked
		case slices.Contains(unconsolidatableCodes, k.Code):
			reason = ReasonUnconsolidatable
		}
		node := st.nodeByName[k.Node]
		if reason == "" || node == nil {
			continue
		}
		c.recorder.Eventf(node, nil, corev1.EventTypeNormal, reason, "Plan", "%s: %s", k.Code, k.Reason)
		if nc := st.claimOfNode[k.Node]; nc != nil {
			c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, reason, "Plan", "%s: %s", k.Code, k.Reason)
		}
	}
	for n := range c.lastCode {
		if !seen[n] {
			delete(c.lastCode, n)
		}
	}
}

// start begins a command: annotate, taint, condition, launch.
func (c *Controller) start(ctx context.Context, st *state, cmd planner.Command, now time.Time) error {
	if cmd.Reboot {
		return c.startReboot(ctx, st, cmd, now)
	}
	logger := log.FromContext(ctx)
	cs := commandState{
		ID: commandID(cmd, now), Reason: string(cmd.Reason), ConsolidationType: cmd.ConsolidationType, Started: now,
		SavingsPerHour: cmd.SavingsPerHour, Message: cmd.Message,
	}
	if cmd.TerminationGracePeriod != nil {
		cs.TerminationGracePeriod = &metav1.Duration{Duration: *cmd.TerminationGracePeriod}
	}
	var candidates []*karpv1.NodeClaim
	for i, node := range cmd.Nodes {
		name := ""
		if i < len(cmd.NodeClaims) {
			name = cmd.NodeClaims[i]
		}
		nc := st.claimByName[name]
		if nc == nil {
			nc = st.claimOfNode[node]
		}
		if nc == nil || nc.DeletionTimestamp != nil || nc.Annotations[CommandAnnotationKey] != "" {
			return fmt.Errorf("command over node %s: its NodeClaim is gone, deleting or in another command", node)
		}
		// Annotated and conditioned below: a copy, not the cache's object
		// (a later command of this pass sees the annotation on it).
		nc = st.own(nc)
		candidates = append(candidates, nc)
		cs.NodeClaims = append(cs.NodeClaims, nc.Name)
	}
	for i := range cmd.Replacements {
		cs.Replacements = append(cs.Replacements, replacementName(cmd.Replacements[i].NodePool, cs.ID, i))
	}
	cs.Destinations = c.world.destinations(cmd, cs.Replacements)
	raw, _ := json.Marshal(cs)
	// The placement gate holds the new pods of the evicted owners from now
	// on (before any is evicted), until they are nominated. Without it the
	// nominations still go on.
	if len(cs.Destinations) > 0 {
		mine := map[types.UID]bool{}
		for o := range cs.Destinations {
			mine[o] = true
		}
		c.nom.starts(cs.ID, mine, now)
		if err := c.gate.sync(ctx, c.kube, c.nom.owners(), now); err != nil {
			logger.Error(err, "the placement gate does not hold this command's recreated pods", "command", cs.ID)
		}
	}

	// 1. Annotate: from here on the command exists in the cluster.
	var annotated []*karpv1.NodeClaim
	for _, nc := range candidates {
		base := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[CommandAnnotationKey] = string(raw)
		if err := nodeclaimutil.Patch(ctx, c.kube, nc, base); err != nil {
			c.rollback(ctx, st, &active{cmd: cs, candidates: annotated, replacements: map[string]*karpv1.NodeClaim{}}, "the NodeClaims changed while the command started")
			return fmt.Errorf("annotating NodeClaim %s: %w", nc.Name, err)
		}
		annotated = append(annotated, nc)
	}
	a := &active{cmd: cs, candidates: candidates, replacements: map[string]*karpv1.NodeClaim{}}
	// 2. Taint, and say why.
	for _, nc := range candidates {
		if n := st.nodeOfClaim[nc.Name]; n != nil {
			if err := c.setTaint(ctx, n, true); err != nil {
				c.rollback(ctx, st, a, "tainting the node failed")
				return err
			}
		}
		base := nc.DeepCopy()
		nc.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, cs.Reason, cs.Message, now)
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil && !apierrors.IsNotFound(err) {
			logger.V(1).Info("setting DisruptionReason", "nodeclaim", nc.Name, "error", err.Error())
		}
	}
	// 3. Launch the replacements under their fixed names. A
	// consolidation's replacements remember the types they replace (no
	// A -> B -> A within planner.ReplacementHold).
	var replaced string
	if cmd.Reason == planner.ReasonUnderutilized {
		var removed, launched []string
		for _, nc := range candidates {
			removed = append(removed, nc.Labels[corev1.LabelInstanceTypeStable])
		}
		for _, r := range cmd.Replacements {
			launched = append(launched, r.Offering.InstanceType)
		}
		replaced = strings.Join(planner.NetReplacedTypes(slices.DeleteFunc(removed, func(s string) bool { return s == "" }), launched), ",")
	}
	for i := range cmd.Replacements {
		planned := &cmd.Replacements[i]
		np := c.world.pools[planned.NodePool]
		if np == nil {
			c.rollback(ctx, st, a, "the replacement's NodePool "+planned.NodePool+" is gone")
			return fmt.Errorf("replacement of command %s: unknown NodePool %q", cs.ID, planned.NodePool)
		}
		nc := c.newNodeClaim(np, planned, c.world.types[np.Name], strings.ToLower(cs.Reason))
		nc.GenerateName = ""
		nc.Name = cs.Replacements[i]
		if nc.Labels == nil {
			nc.Labels = map[string]string{}
		}
		nc.Labels[CommandLabelKey] = cs.ID
		if replaced != "" {
			if nc.Annotations == nil {
				nc.Annotations = map[string]string{}
			}
			nc.Annotations[planner.ReplacedTypesAnnotation] = replaced
		}
		if err := c.kube.Create(ctx, nc); err != nil && !apierrors.IsAlreadyExists(err) {
			c.rollback(ctx, st, a, "creating a replacement failed: "+err.Error())
			return fmt.Errorf("creating replacement %s: %w", nc.Name, err)
		}
	}
	decision := decisionDelete
	switch {
	case cmd.TerminateFirst:
		decision = decisionTerminateFirst
	case len(cmd.Replacements) > 0:
		decision = decisionReplace
	}
	c.metrics.DisruptionDecisions.WithLabelValues(decision, strings.ToLower(cs.Reason), cs.ConsolidationType).Inc()
	pools := map[string]bool{}
	for _, nc := range candidates {
		if pool := nodeclaimutil.NodePool(nc); pool != "" && !pools[pool] {
			pools[pool] = true
			c.metrics.DisruptionDecisionsByNodePool.WithLabelValues(decision, strings.ToLower(cs.Reason), cs.ConsolidationType, pool).Inc()
			if cmd.TerminateFirst {
				c.metrics.DisruptionTerminateFirstDecisions.WithLabelValues(pool, strings.ToLower(cs.Reason), cmd.TerminateFirstReason).Inc()
			}
		}
	}
	for _, nc := range candidates {
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonDisruptionLaunching, "Disrupt",
			"%s (command %s, %d replacements)", cs.Message, cs.ID, len(cs.Replacements))
		if n := st.nodeOfClaim[nc.Name]; n != nil {
			c.recorder.Eventf(n, nil, corev1.EventTypeNormal, ReasonDisruptionLaunching, "Disrupt",
				"%s (command %s, %d replacements)", cs.Message, cs.ID, len(cs.Replacements))
		}
	}
	logger.Info("disruption command started", "command", cs.ID, "reason", cs.Reason, "nodes", cmd.Nodes, "replacements", cs.Replacements, "savingsPerHour", cs.SavingsPerHour)
	return nil
}

func replacementName(pool, id string, i int) string {
	name := fmt.Sprintf("%s-%s-%d", pool, id, i)
	if len(name) > 200 {
		name = fmt.Sprintf("r-%s-%d", id, i)
	}
	return name
}

// advance drives a command found in the cluster; done is true when it
// needs nothing more from this controller.
func (c *Controller) advance(ctx context.Context, st *state, a *active, now time.Time) (bool, error) {
	live := 0
	for _, nc := range a.candidates {
		if nc.DeletionTimestamp == nil {
			live++
		}
	}
	if live == 0 {
		delete(c.waiting, a.cmd.ID)
		return true, nil // deleting: termination has it
	}
	if strings.HasPrefix(a.cmd.ID, "malformed-") {
		return true, c.rollback(ctx, st, a, "its command annotation could not be read")
	}
	initialized := 0
	for _, name := range a.cmd.Replacements {
		r := a.replacements[name]
		if r == nil || r.DeletionTimestamp != nil {
			// Gone: the lifecycle deleted it (launch or registration
			// failed), or a restart came between the annotation and its
			// creation. Either way the command cannot finish as planned.
			return true, c.rollback(ctx, st, a, rollbackReplacementFailed+" ("+name+" is gone)")
		}
		if r.IsTrue(karpv1.ConditionTypeInitialized) {
			initialized++
		}
	}
	if initialized < len(a.cmd.Replacements) {
		if now.Sub(a.cmd.Started) >= c.opts.Timeout {
			return true, c.rollback(ctx, st, a, fmt.Sprintf("%s (%s)", rollbackTimeout, c.opts.Timeout))
		}
		if !c.waiting[a.cmd.ID] {
			c.waiting[a.cmd.ID] = true
			for _, nc := range a.candidates {
				c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonDisruptionWaitingReadiness, "Disrupt",
					"waiting for %d replacements to initialize (%s)", len(a.cmd.Replacements)-initialized, strings.Join(a.cmd.Replacements, ", "))
			}
		}
		return false, nil
	}
	// The pods about to be evicted come back gated only once the API
	// server has the command's owners in the placement policy.
	owners := make([]types.UID, 0, len(a.cmd.Destinations))
	for o := range a.cmd.Destinations {
		owners = append(owners, o)
	}
	if c.gate.settling(owners, now) {
		return false, nil
	}
	return true, c.finish(ctx, st, a)
}

// finish deletes the candidates; termination drains them. The
// replacements are held first (HoldTaintKey).
func (c *Controller) finish(ctx context.Context, st *state, a *active) error {
	var errs []error
	for _, name := range a.cmd.Replacements {
		if n := st.nodeOfClaim[name]; n != nil {
			if err := c.setHold(ctx, n, a.cmd.ID); err != nil {
				return err // the next pass retries; nothing deleted yet
			}
		}
	}
	for _, nc := range a.candidates {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if err := c.boundDrain(ctx, nc, a.cmd.TerminationGracePeriod); err != nil {
			errs = append(errs, err)
			continue
		}
		uid := nc.UID
		if err := c.kube.Delete(ctx, nc, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err))
			continue
		}
		c.metrics.NodeClaimsDisrupted.WithLabelValues(strings.ToLower(a.cmd.Reason), nodeclaimutil.NodePool(nc), nc.Labels[karpv1.CapacityTypeLabelKey]).Inc()
		note := fmt.Sprintf("%s (command %s)", a.cmd.Message, a.cmd.ID)
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonDisruptionTerminating, "Disrupt", "%s", note)
		if n := st.nodeOfClaim[nc.Name]; n != nil {
			c.recorder.Eventf(n, nil, corev1.EventTypeNormal, ReasonDisruptionTerminating, "Disrupt", "%s", note)
		}
	}
	if len(errs) == 0 {
		c.metrics.DisruptionSavings.WithLabelValues(strings.ToLower(a.cmd.Reason)).Add(max(a.cmd.SavingsPerHour, 0))
		delete(c.waiting, a.cmd.ID)
		log.FromContext(ctx).Info("disruption command done", "command", a.cmd.ID, "nodeclaims", a.cmd.NodeClaims)
		c.Kick()
	}
	return errors.Join(errs...)
}

// boundDrain sets a repaired candidate's termination deadline (now plus
// the command's drain bound) before it is deleted, unless it has an
// earlier one; the termination controllers evict what is left and
// terminate the instance when it passes, whatever blocks the drain.
func (c *Controller) boundDrain(ctx context.Context, nc *karpv1.NodeClaim, grace *metav1.Duration) error {
	if grace == nil {
		return nil
	}
	deadline := c.clock.Now().Add(grace.Duration).UTC()
	if s, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil && !t.After(deadline) {
			return nil
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		karpv1.NodeClaimTerminationTimestampAnnotationKey: deadline.Format(time.RFC3339)}}})
	if err := c.kube.Patch(ctx, nc, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting the termination deadline of NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

// rollback undoes a command: replacements deleted, candidates untainted
// and unmarked, with why on their DisruptionReason condition and an event.
func (c *Controller) rollback(ctx context.Context, st *state, a *active, why string) error {
	var errs []error
	for _, r := range a.replacements {
		if r.DeletionTimestamp == nil {
			if err := c.kube.Delete(ctx, r); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting replacement %s: %w", r.Name, err))
			}
		}
	}
	// Replacements created but not in the list read (a race with start).
	for _, name := range a.cmd.Replacements {
		if _, ok := a.replacements[name]; !ok {
			r := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := c.kube.Delete(ctx, r); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting replacement %s: %w", name, err))
			}
		}
	}
	now := c.clock.Now()
	for _, nc := range a.candidates {
		if n := st.nodeOfClaim[nc.Name]; n != nil && n.DeletionTimestamp == nil {
			if err := c.setTaint(ctx, n, false); err != nil {
				errs = append(errs, err)
				continue // keep the annotation, so the next pass retries
			}
		}
		cur := &karpv1.NodeClaim{}
		if err := c.kube.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		base := cur.DeepCopy()
		delete(cur.Annotations, CommandAnnotationKey)
		if err := nodeclaimutil.Patch(ctx, c.kube, cur, base); err != nil {
			errs = append(errs, fmt.Errorf("unmarking NodeClaim %s: %w", nc.Name, err))
			continue
		}
		base = cur.DeepCopy()
		cur.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionFalse, ConditionReasonCommandRolledBack,
			fmt.Sprintf("%s command %s rolled back: %s", a.cmd.Reason, a.cmd.ID, why), now)
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, cur, base); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("recording the rollback", "nodeclaim", nc.Name, "error", err.Error())
		}
		c.recorder.Eventf(cur, nil, corev1.EventTypeWarning, ReasonDisruptionBlocked, "Rollback",
			"%s command %s rolled back, the node is kept: %s", a.cmd.Reason, a.cmd.ID, why)
	}
	delete(c.waiting, a.cmd.ID)
	log.FromContext(ctx).Info("disruption command rolled back", "command", a.cmd.ID, "reason", why)
	return errors.Join(errs...)
}

// setTaint adds or removes karpenter.sh/disrupted:NoSchedule. The patch
// is under optimistic locking (the taint list is replaced whole), retried
// on a conflict: other controllers change taints too (the node lifecycle
// controller taints a node that turns NotReady, the very nodes repair
// acts on).
func (c *Controller) setTaint(ctx context.Context, n *corev1.Node, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if hasDisruptedTaint(cur) == on {
			return nil
		}
		base := cur.DeepCopy()
		if on {
			cur.Spec.Taints = append(cur.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
		} else {
			cur.Spec.Taints = slices.DeleteFunc(cur.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
		}
		return nodeclaimutil.Patch(ctx, c.kube, cur, base)
	})
	if err != nil {
		return fmt.Errorf("%s the disrupted taint of node %s: %w", map[bool]string{true: "adding", false: "removing"}[on], n.Name, err)
	}
	return nil
}

// setHold puts HoldTaintKey=id:PreferNoSchedule on a replacement node.
func (c *Controller) setHold(ctx context.Context, n *corev1.Node, id string) error {
	cur := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if slices.ContainsFunc(cur.Spec.Taints, func(t corev1.Taint) bool { return t.Key == HoldTaintKey }) {
		return nil
	}
	base := cur.DeepCopy()
	cur.Spec.Taints = append(cur.Spec.Taints, corev1.Taint{Key: HoldTaintKey, Value: id, Effect: corev1.TaintEffectPreferNoSchedule})
	if err := nodeclaimutil.Patch(ctx, c.kube, cur, base); err != nil {
		return fmt.Errorf("holding replacement node %s: %w", n.Name, err)
	}
	return nil
}

// liftHolds removes HoldTaintKey from nodes whose command has no candidate
// NodeClaim left (they are gone: their pods were evicted and placed).
func (c *Controller) liftHolds(ctx context.Context, st *state) error {
	live := map[string]bool{}
	for _, a := range st.commands {
		live[a.cmd.ID] = true
	}
	var errs []error
	for _, n := range st.nodes {
		i := slices.IndexFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == HoldTaintKey })
		if i < 0 || live[n.Spec.Taints[i].Value] {
			continue
		}
		cur := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		base := cur.DeepCopy()
		cur.Spec.Taints = slices.DeleteFunc(cur.Spec.Taints, func(t corev1.Taint) bool { return t.Key == HoldTaintKey })
		if err := nodeclaimutil.Patch(ctx, c.kube, cur, base); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("lifting the hold of node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// untaintStale lifts the disrupted taint from nodes no command holds: not
// deleting, their NodeClaim present, not deleting, without a command or a
// replacement by provisioning.
func (c *Controller) untaintStale(ctx context.Context, st *state) error {
	var errs []error
	for _, n := range st.nodes {
		if !hasDisruptedTaint(n) || n.DeletionTimestamp != nil {
			continue
		}
		nc := st.claimOfNode[n.Name]
		if nc == nil || nc.DeletionTimestamp != nil || nc.Annotations[CommandAnnotationKey] != "" || nc.Annotations[replacedByAnnotationKey] != "" {
			continue
		}
		if err := c.setTaint(ctx, n, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
