package podmetrics

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// Controller publishes the pod metrics (see the package doc).
type Controller struct {
	metrics *metrics.Registry

	// pods and nodes are the informers' stores (set by Register); the
	// scrape reads their objects in place.
	pods, nodes toolscache.Store

	mu sync.Mutex
	// pending holds the keys (namespace/name) of the pods seen Pending
	// whose startup has not been observed yet.
	pending map[string]struct{}
}

// NewController returns the controller.
func NewController(m *metrics.Registry) *Controller {
	return &Controller{metrics: m, pending: map[string]struct{}{}}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "metrics.pod" }

// Register takes the Pod and Node informers' stores, makes them the
// source of karpenter_pods_state, and watches pods for their startup.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	podInf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("pod metrics: pod informer: %w", err)
	}
	nodeInf, err := mgr.GetCache().GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("pod metrics: node informer: %w", err)
	}
	if c.pods, c.nodes = nodeclaimutil.Store(podInf), nodeclaimutil.Store(nodeInf); c.pods == nil || c.nodes == nil {
		return fmt.Errorf("pod metrics: the pod or node informer has no store")
	}
	if _, err := podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.Observe(o) },
		UpdateFunc: func(_, o any) { c.Observe(o) },
		DeleteFunc: c.forget,
	}); err != nil {
		return fmt.Errorf("pod metrics: watching pods: %w", err)
	}
	c.metrics.PodsState.SetSource(c.state)
	return nil
}

// Observe takes one state of a pod: Pending marks it; a later state with
// Ready True observes its startup once; a terminal one forgets it.
func (c *Controller) Observe(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod.Status.Phase == corev1.PodPending {
		c.pending[key] = struct{}{}
		return
	}
	if _, seen := c.pending[key]; !seen {
		return
	}
	if ready := readyCondition(pod); ready != nil && ready.Status == corev1.ConditionTrue {
		c.metrics.PodsStartupDuration.Observe(ready.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
		delete(c.pending, key)
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		delete(c.pending, key) // ended without being ready: not a startup
	}
}

func (c *Controller) forget(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, pod.Namespace+"/"+pod.Name)
}

// Waiting reports whether the pod was seen Pending and its startup is not
// observed (nor forgotten) yet.
func (c *Controller) Waiting(namespace, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[namespace+"/"+name]
	return ok
}

// state emits karpenter_pods_state, one series per cached pod.
func (c *Controller) state(emit metrics.Emit) {
	none := &corev1.Node{}
	for _, o := range c.pods.List() {
		pod := o.(*corev1.Pod)
		node := none
		if pod.Spec.NodeName != "" {
			if n, ok, _ := c.nodes.GetByKey(pod.Spec.NodeName); ok {
				node = n.(*corev1.Node)
			}
		}
		emit(1, StateLabels(pod, node)...)
	}
}

// StateLabels are the values of karpenter_pods_state's labels
// (metrics.PodStateLabels, in order) for pod on node (an empty Node when
// the pod is unbound or its node is unknown).
func StateLabels(pod *corev1.Pod, node *corev1.Node) []string {
	ready := readyCondition(pod)
	pool := node.Labels[karpv1.NodePoolLabelKey]
	return []string{
		pod.Name,
		pod.Namespace,
		owner(pod),
		pod.Spec.NodeName,
		strconv.FormatBool(pod.Spec.NodeName != ""),
		pool,
		node.Labels[corev1.LabelTopologyZone],
		node.Labels[corev1.LabelArchStable],
		node.Labels[karpv1.CapacityTypeLabelKey],
		node.Labels[corev1.LabelInstanceTypeStable],
		string(pod.Status.Phase),
		strconv.FormatBool(ready != nil && ready.Status == corev1.ConditionTrue),
		strconv.FormatBool(pool != ""),
	}
}

// owner is the pod's first owner as an API path, as the peer spells it
// (the plural by appending "s" to the lower-cased kind), or "".
func owner(pod *corev1.Pod) string {
	if len(pod.OwnerReferences) == 0 {
		return ""
	}
	ref := pod.OwnerReferences[0]
	return "/apis/" + ref.APIVersion + "/namespaces/" + pod.Namespace + "/" + strings.ToLower(ref.Kind) + "s/" + ref.Name
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
