package disruption

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// destinationGrace is how long the destinations of a command are still
// used once its last candidate NodeClaim is gone: the last pods evicted
// are recreated about when the node goes.
const destinationGrace = 30 * time.Second

// tallyInterval is how often the sums of how the recreated pods were
// first seen are logged while commands go on.
const tallyInterval = time.Minute

// liftedMemory is how long a pod whose gate was removed is not tried again
// while the cache still shows the gate.
const liftedMemory = 5 * time.Second

// nominator writes status.nominatedNodeName on the new pods of owners a
// command evicted, to the nodes the command planned for them (see
// snapshot.Destinations). The destinations live on the candidates'
// command annotation; what it holds in memory is rebuilt from there by
// every pass (update), so a restarted controller goes on nominating.
type nominator struct {
	mu sync.Mutex
	// byCommand are the resolved destinations of each command, and when
	// the command was last seen in the cluster.
	byCommand map[string]seenDestinations
	merged    snapshot.Destinations
	// since is, per owner, when the earliest command over it started.
	since map[types.UID]time.Time
	// seen are the pods of those owners already counted in tally.
	seen  map[types.UID]bool
	tally tally
	// tallyLogged is when the tally was last logged.
	tallyLogged time.Time
	// written are the nominations written, by pod UID (the cache may not
	// show them yet).
	written map[types.UID]string
	// lifted are the pods whose gate this process removed, and when (the
	// cache may still show the gate for a moment; it is tried again after
	// liftedMemory).
	lifted map[types.UID]time.Time
	// starting are the owners of commands this process started that no
	// pass has read back from the cluster yet (for the placement gate).
	starting map[string]startingOwners
	kick     chan struct{}
}

type startingOwners struct {
	owners map[types.UID]bool
	at     time.Time
}

type seenDestinations struct {
	dest snapshot.Destinations
	// owners are all the command's owners, whether or not a target of
	// theirs is resolved to a node yet (the placement gate holds them all).
	owners        map[types.UID]bool
	started, seen time.Time
}

// tally counts the new pods of the commands' owners, by how they were
// first seen: nominated by us, already placed by the scheduler on a
// planned node or elsewhere, or already tried by it (it went first). Of
// the nominated, gated is how many arrived with the placement gate; the
// gated pods released without a nomination (no room planned for them
// left) are ungatedOnly.
type tally struct{ nominated, gated, ungatedOnly, asPlanned, elsewhere, tried int }

func newNominator() *nominator {
	return &nominator{byCommand: map[string]seenDestinations{}, written: map[types.UID]string{}, seen: map[types.UID]bool{},
		starting: map[string]startingOwners{}, lifted: map[types.UID]time.Time{}, kick: make(chan struct{}, 1)}
}

// destinations computes a command's destinations when it starts: for each
// evicted pod with an owner, its planned node (Placements) or replacement
// (by the replacement NodeClaim's name), with the owner's pods already on
// that node as the base.
func (w *world) destinations(cmd planner.Command, replacementNames []string) map[types.UID]map[string]snapshot.Destination {
	d := snapshot.Destinations{}
	type key struct {
		owner  types.UID
		target string
	}
	planned := map[key]int{}
	add := func(ref engine.PodRef, target string) {
		pod := w.pods[ref]
		if pod == nil {
			return
		}
		if owner := snapshot.OwnerOf(pod); owner != "" {
			planned[key{owner, target}]++
		}
	}
	for _, pl := range cmd.Placements {
		if !pl.InFlight {
			add(pl.Pod, pl.Node)
		}
	}
	for i, r := range cmd.Replacements {
		if i < len(replacementNames) {
			for _, ref := range r.Pods {
				add(ref, replacementNames[i])
			}
		}
	}
	if len(planned) == 0 {
		return nil
	}
	base := map[key]int{}
	for _, pod := range w.pods {
		if pod.Spec.NodeName == "" {
			continue
		}
		k := key{snapshot.OwnerOf(pod), pod.Spec.NodeName}
		if _, ok := planned[k]; ok && k.owner != "" {
			base[k]++
		}
	}
	for k, n := range planned {
		d.Add(k.owner, k.target, n, base[k])
	}
	return d
}

// update takes the destinations of the commands in the cluster, their
// targets resolved to nodes (a replacement's once it has one), and keeps
// those of commands gone less than destinationGrace ago.
func (n *nominator) update(ctx context.Context, st *state, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range st.commands {
		if len(a.cmd.Destinations) == 0 {
			continue
		}
		resolved := snapshot.Destinations{}
		owners := map[types.UID]bool{}
		for owner, m := range a.cmd.Destinations {
			owners[owner] = true
			for target, d := range m {
				node := ""
				switch {
				case st.nodeOfClaim[target] != nil:
					node = st.nodeOfClaim[target].Name
				case st.nodeByName[target] != nil:
					node = target
				}
				if node != "" {
					resolved.Add(owner, node, d.Planned, d.Base)
				}
			}
		}
		n.byCommand[a.cmd.ID] = seenDestinations{dest: resolved, owners: owners, started: a.cmd.Started, seen: now}
	}
	for id, s := range n.starting {
		if _, ok := n.byCommand[id]; ok || now.Sub(s.at) > destinationGrace {
			delete(n.starting, id)
		}
	}
	n.merged = snapshot.Destinations{}
	n.since = map[types.UID]time.Time{}
	for id, s := range n.byCommand {
		if now.Sub(s.seen) > destinationGrace {
			delete(n.byCommand, id)
			continue
		}
		for owner, m := range s.dest {
			if t, ok := n.since[owner]; !ok || s.started.Before(t) {
				n.since[owner] = s.started
			}
			for node, d := range m {
				n.merged.Add(owner, node, d.Planned, d.Base)
			}
		}
	}
	logTally := func(final bool) {
		log.FromContext(ctx).Info("recreated pods of evicted owners", "final", final, "nominated", n.tally.nominated,
			"nominatedWhileGated", n.tally.gated, "ungatedWithoutNomination", n.tally.ungatedOnly,
			"placedAsPlannedBeforeNomination", n.tally.asPlanned, "placedElsewhereBeforeNomination", n.tally.elsewhere,
			"triedBeforeNomination", n.tally.tried)
		n.tallyLogged = now
	}
	if len(n.merged) == 0 {
		clear(n.written)
		clear(n.seen)
		if n.tally != (tally{}) {
			logTally(true)
			n.tally = tally{}
		}
		return
	}
	// While commands overlap for long, the sums so far once a minute.
	if n.tally != (tally{}) && now.Sub(n.tallyLogged) >= tallyInterval {
		if n.tallyLogged.IsZero() {
			n.tallyLogged = now // the first minute
			return
		}
		logTally(false)
	}
}

// starts records the owners of a command being started, until a pass
// reads it back from the cluster.
func (n *nominator) starts(id string, owners map[types.UID]bool, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.starting[id] = startingOwners{owners: owners, at: now}
}

// owners are the owners of the destinations of the commands known and
// starting, each with the ids of its commands: what the placement gate
// holds.
func (n *nominator) owners() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	by := map[string]map[types.UID]bool{}
	for id, s := range n.byCommand {
		by[id] = map[types.UID]bool{}
		for o := range s.owners {
			by[id][o] = true
		}
	}
	for id, s := range n.starting {
		if by[id] == nil {
			by[id] = map[types.UID]bool{}
		}
		for o := range s.owners {
			by[id][o] = true
		}
	}
	return gateOwners(by)
}

// wants reports whether a pod may need a nomination (cheap; for the pod
// event handler).
func (n *nominator) wants(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" {
		return false
	}
	if gateIndex(pod) >= 0 {
		return true
	}
	if pod.Status.NominatedNodeName != "" {
		return false
	}
	owner := snapshot.OwnerOf(pod)
	if owner == "" {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.merged[owner] != nil
}

func (n *nominator) trigger() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// nominate lists the pods, writes the nominations Nominations returns, and
// lifts the placement gate (GateName) of every gated pod: of a nominated
// pod once its nomination is written (so the kube-scheduler sees both at
// once), of any other at once (its owner has no command in flight, the
// controller restarted, or no planned node has room left for it: the
// scheduler and provisioning decide for it, as without the gate). A gate
// whose removal fails is tried again by the next call; a gate older than
// gateTimeout is reported.
// The pods are read from store (the informer's, without copies) when it is
// set, else listed from kube.
func (n *nominator) nominate(ctx context.Context, kube client.Client, store toolscache.Store, now time.Time) error {
	n.mu.Lock()
	dest, since := n.merged, n.since
	written := make(map[types.UID]string, len(n.written))
	for k, v := range n.written {
		written[k] = v
	}
	lifted := make(map[types.UID]bool, len(n.lifted))
	for uid, at := range n.lifted {
		if now.Sub(at) < liftedMemory {
			lifted[uid] = true
		}
	}
	n.mu.Unlock()
	list, err := nodeclaimutil.ListPods(ctx, store, kube)
	if err != nil {
		return fmt.Errorf("listing Pods: %w", err)
	}
	var gated []*corev1.Pod
	for _, pod := range list {
		if gateIndex(pod) >= 0 && pod.DeletionTimestamp == nil && pod.Spec.NodeName == "" && !lifted[pod.UID] {
			gated = append(gated, pod)
		}
	}
	if len(dest) == 0 && len(gated) == 0 {
		return nil
	}
	// Which pods still exist, to forget the others' writes and lifts; built
	// only past the early return, which every idle pass takes (a map of
	// every pod in the cluster each pass otherwise).
	live := make(map[types.UID]bool, len(list))
	for _, pod := range list {
		live[pod.UID] = true
	}
	writes := snapshot.Nominations(snapshot.NominationInput{Destinations: dest, Pods: list, Written: written})
	// Written in parallel: the kube-scheduler takes new pods one by one,
	// and every nomination it sees before it gets to a pod counts.
	var (
		errs []error
		done = map[types.UID]string{}
		wmu  sync.Mutex
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for _, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, w.Node)))
			pod := &corev1.Pod{}
			pod.Namespace, pod.Name = w.Pod.Namespace, w.Pod.Name
			err := kube.Status().Patch(ctx, pod, patch)
			wmu.Lock()
			defer wmu.Unlock()
			switch {
			case err == nil:
				done[w.Pod.UID] = w.Node
			case apierrors.IsNotFound(err) || apierrors.IsInvalid(err):
				// Gone, or bound meanwhile (a bound pod takes no nomination).
			default:
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	// The gates: after the nominations (whether or not they were written:
	// a gate is never kept for a nomination that failed).
	ungated := map[types.UID]bool{}
	for _, pod := range gated {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			removed, err := ungate(ctx, kube, pod)
			wmu.Lock()
			defer wmu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if removed {
				ungated[pod.UID] = true
			}
		}()
	}
	wg.Wait()
	n.mu.Lock()
	n.count(list, dest, since, done, ungated)
	for uid := range n.written {
		if !live[uid] {
			delete(n.written, uid)
		}
	}
	for uid, node := range done {
		n.written[uid] = node
	}
	for uid, at := range n.lifted {
		if !live[uid] || now.Sub(at) >= liftedMemory {
			delete(n.lifted, uid)
		}
	}
	for uid := range ungated {
		n.lifted[uid] = now
	}
	n.mu.Unlock()
	if len(done) > 0 || len(ungated) > 0 {
		log.FromContext(ctx).Info("nominated recreated pods to their planned nodes", "pods", len(done), "ungated", len(ungated), "failed", len(errs))
	}
	if len(errs) > 0 {
		return fmt.Errorf("nominating %d pods: %w", len(errs), errs[0])
	}
	return nil
}

// runNominator nominates whenever a pod of a command's owner is created
// (between passes: the kube-scheduler looks at a new pod at once).
func (c *Controller) runNominator(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(c.Name())
	ctx = logr.NewContext(ctx, logger)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.nom.kick:
		}
		if err := c.nom.nominate(ctx, c.kube, c.podStore, c.clock.Now()); err != nil {
			logger.V(1).Info("nominating recreated pods", "error", err.Error())
		}
	}
}

// podHandler triggers the nominator for new pods of a command's owners.
func (c *Controller) podHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && c.nom.wants(pod) {
				c.nom.trigger()
			}
		},
	}
}

// count classifies, once, each new pod of the owners (created since the
// owner's earliest command started) into the tally. Called with n.mu held.
func (n *nominator) count(pods []*corev1.Pod, dest snapshot.Destinations, since map[types.UID]time.Time, done map[types.UID]string, ungated map[types.UID]bool) {
	for _, pod := range pods {
		owner := snapshot.OwnerOf(pod)
		if owner == "" || dest[owner] == nil || n.seen[pod.UID] || n.written[pod.UID] != "" ||
			pod.CreationTimestamp.Time.Before(since[owner].Truncate(time.Second)) {
			continue
		}
		node := pod.Spec.NodeName
		if node == "" {
			node = pod.Status.NominatedNodeName
		}
		switch {
		case done[pod.UID] != "":
			n.tally.nominated++
			if ungated[pod.UID] {
				n.tally.gated++
			}
		case ungated[pod.UID]:
			n.tally.ungatedOnly++
		case node != "" && dest[owner][node].Planned > 0:
			n.tally.asPlanned++
		case node != "":
			n.tally.elsewhere++
		case pod.DeletionTimestamp == nil && tried(pod):
			n.tally.tried++
		default:
			continue // not looked at by anyone yet
		}
		n.seen[pod.UID] = true
	}
}

// tried: the kube-scheduler has looked at the pod (it set PodScheduled;
// the API server's SchedulingGated reason on a gated pod does not count).
func tried(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Reason != corev1.PodReasonSchedulingGated
		}
	}
	return false
}
