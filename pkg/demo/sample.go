package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Sample is what the view shows at one instant.
type Sample struct {
	Time time.Time
	// Pending pods are not bound to a node yet; Running ones are bound and
	// running. Both count the workload's namespaces only (not
	// kube-system).
	Pending, Running int
	// Pools are the NodePools that have nodes or NodeClaims, by name.
	Pools []PoolSample
	// Launching counts NodeClaims whose node has not registered yet.
	Launching int
	// PricePerHour is the launched NodeClaims' total hourly price.
	PricePerHour float64
}

// Nodes is the total node count over all pools.
func (s Sample) Nodes() int {
	n := 0
	for _, p := range s.Pools {
		n += p.Nodes
	}
	return n
}

// PoolSample is one NodePool's share.
type PoolSample struct {
	Name string
	// Nodes are the pool's registered nodes; Shapes break them down by
	// instance type and capacity type.
	Nodes  int
	Shapes []Shape
	// PricePerHour sums the pool's launched NodeClaims.
	PricePerHour float64
}

// Shape counts the nodes of one instance type and capacity type.
type Shape struct {
	InstanceType, CapacityType string
	Count                      int
}

// String is "3x m7g.large spot".
func (s Shape) String() string {
	return fmt.Sprintf("%dx %s %s", s.Count, s.InstanceType, s.CapacityType)
}

// systemNamespaces are left out of the pod counts.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}

// Collect reads one Sample through c (any client; an uncached one is
// fine: a sample is three list calls).
func Collect(ctx context.Context, c client.Reader, now time.Time) (Sample, error) {
	s := Sample{Time: now}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return s, fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods.Items {
		if systemNamespaces[p.Namespace] || p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		case p.Spec.NodeName == "":
			s.Pending++
		case p.Status.Phase == corev1.PodRunning:
			s.Running++
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return s, fmt.Errorf("listing nodes: %w", err)
	}
	var claims karpv1.NodeClaimList
	if err := c.List(ctx, &claims); err != nil {
		return s, fmt.Errorf("listing NodeClaims: %w", err)
	}
	pools := map[string]*PoolSample{}
	pool := func(name string) *PoolSample {
		p := pools[name]
		if p == nil {
			p = &PoolSample{Name: name}
			pools[name] = p
		}
		return p
	}
	shapes := map[string]map[Shape]int{}
	for _, n := range nodes.Items {
		name := n.Labels[karpv1.NodePoolLabelKey]
		if name == "" {
			continue
		}
		p := pool(name)
		p.Nodes++
		if shapes[name] == nil {
			shapes[name] = map[Shape]int{}
		}
		shapes[name][Shape{InstanceType: n.Labels[corev1.LabelInstanceTypeStable], CapacityType: n.Labels[karpv1.CapacityTypeLabelKey]}]++
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		p := pool(nodeclaimutil.NodePool(nc))
		if price, ok := nodeclaimutil.HourlyPrice(nc); ok && nc.DeletionTimestamp == nil {
			p.PricePerHour += price
			s.PricePerHour += price
		}
		if nc.DeletionTimestamp == nil && !nc.IsTrue(karpv1.ConditionTypeRegistered) {
			s.Launching++
		}
	}
	for name, p := range pools {
		for sh, n := range shapes[name] {
			sh.Count = n
			p.Shapes = append(p.Shapes, sh)
		}
		sort.Slice(p.Shapes, func(i, j int) bool {
			a, b := p.Shapes[i], p.Shapes[j]
			if a.Count != b.Count {
				return a.Count > b.Count
			}
			return a.InstanceType+a.CapacityType < b.InstanceType+b.CapacityType
		})
		s.Pools = append(s.Pools, *p)
	}
	sort.Slice(s.Pools, func(i, j int) bool { return s.Pools[i].Name < s.Pools[j].Name })
	return s, nil
}

// Reasons of controller events worth a line in the view (Nominated and the
// like are too many to show).
var shownReasons = map[string]bool{
	"Launched": true, "LaunchFailed": true, "InsufficientCapacity": true, "Registered": true,
	"SpotInterrupted": true, "RebalanceRecommendation": true, "ScheduledChange": true,
	"InstanceStopping": true, "InstanceTerminating": true, "Replacing": true, "Rebalanced": true,
	"FailedScheduling": true, "NodePoolLimitReached": true, "Evicted": true, "Drained": true,
	"TerminatingInstance": true, "Terminated": true, "InstanceTerminated": true, "Deleted": true,
	"DisruptionLaunching": true, "DisruptionTerminating": true, "DisruptionBlocked": true,
}

// Event is one controller event, as the view prints it.
type Event struct {
	Time time.Time
	Text string
}

// Events returns dovetail's events newer than since (about NodeClaims,
// nodes, NodePools and pods; only the reasons worth showing), oldest
// first.
func Events(ctx context.Context, c client.Reader, since time.Time) ([]Event, error) {
	var list eventsv1.EventList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var out []Event
	for _, ev := range list.Items {
		if ev.ReportingController != "dovetail" || !shownReasons[ev.Reason] {
			continue
		}
		t := ev.EventTime.Time
		if t.IsZero() {
			t = ev.CreationTimestamp.Time
		}
		if !t.After(since) {
			continue
		}
		note := strings.Join(strings.Fields(ev.Note), " ")
		out = append(out, Event{Time: t, Text: fmt.Sprintf("%s %s/%s: %s", ev.Reason, ev.Regarding.Kind, ev.Regarding.Name, note)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}
