package provisioning

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// watch feeds the batcher from the manager's informers:
//
//   - a pod that becomes provisionable and is not already nominated (a
//     nominated pod's status updates must not hold the window open);
//   - a Node or NodeClaim deleted (pods planned onto it need a new plan);
//   - a registered Node that can take pods (registered, its last blocking
//     taint gone, or its NodeClaim's instance recorded after that): the
//     pods planned onto the NodeClaim are handed to the kube-scheduler
//     (handoff);
//   - a handed-off pod whose nomination the scheduler cleared (it tried
//     the pod and the node could not take it): planned again at once;
//   - a NodePool created, or whose spec or readiness changed.
//
// Status-only churn (node heartbeats, NodePool counters) never triggers,
// so a busy cluster cannot keep a batch window from closing.
func (p *Provisioner) watch(ctx context.Context, c cache.Cache) error {
	pods, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	p.podStore = nodeclaimutil.Store(pods)
	kinds := newUnboundKinds()
	if p.podStore != nil {
		p.kinds = kinds
	}
	podChanged := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if ok && Provisionable(pod) && !p.mem.nominated(pod.UID, p.clock.Now()) {
			p.Trigger()
		}
	}
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				kinds.add(pod)
			}
			podChanged(obj)
		},
		UpdateFunc: func(oldObj, obj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := obj.(*corev1.Pod)
			if ok1 && ok2 {
				kinds.update(o, n)
			}
			if ok1 && ok2 && o.Spec.NodeName == "" && n.Spec.NodeName != "" && p.buffered.Load() {
				// A pod bound: it may have taken a CapacityBuffer's room,
				// which is planned again.
				p.Trigger()
				return
			}
			if ok1 && ok2 && p.mem.refused(o, n) {
				// The scheduler tried a handed-off pod and cleared its
				// nomination: the node cannot take it. Plan it again now
				// rather than when the hand-off would have expired.
				p.Trigger()
				return
			}
			podChanged(obj)
		},
		DeleteFunc: func(obj any) {
			if pod, ok := unwrap(obj).(*corev1.Pod); ok {
				kinds.remove(pod)
				p.mem.forget(pod.UID)
			}
		},
	}); err != nil {
		return err
	}

	claims, err := c.GetInformer(ctx, &karpv1.NodeClaim{})
	if err != nil {
		return fmt.Errorf("NodeClaim informer: %w", err)
	}
	nodes, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("Node informer: %w", err)
	}
	slots := make(chan struct{}, handoffParallelism)
	handoff := func(node *corev1.Node) {
		if p.opts.DisableHandoff {
			return
		}
		go func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			p.handoff(ctx, node)
		}()
	}
	if _, err := claims.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		// A node can register before its NodeClaim records the instance
		// (a fast kubelet, or a slow status write): then the Node's own
		// event found no NodeClaim, and the launch record is the moment
		// to hand its pods over.
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*karpv1.NodeClaim)
			n, ok2 := newObj.(*karpv1.NodeClaim)
			if p.opts.DisableHandoff || !ok1 || !ok2 || o.Status.ProviderID != "" || n.Status.ProviderID == "" {
				return
			}
			nodes, err := nodeclaimutil.NodesForProviderID(ctx, c, n.Status.ProviderID)
			if err != nil {
				return
			}
			for i := range nodes {
				if nodes[i].Labels[karpv1.NodeRegisteredLabelKey] == "true" {
					handoff(&nodes[i])
				}
			}
		},
		DeleteFunc: func(any) { p.Trigger() },
	}); err != nil {
		return err
	}
	if _, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := obj.(*corev1.Node); ok && node.Labels[karpv1.NodeRegisteredLabelKey] == "true" {
				handoff(node)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 || n.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
				return
			}
			// Registered now, or registered and its taints or cordon
			// changed (it may just have become able to take pods).
			if o.Labels[karpv1.NodeRegisteredLabelKey] != "true" || o.Spec.Unschedulable != n.Spec.Unschedulable || !slices.EqualFunc(o.Spec.Taints, n.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
				handoff(n)
			}
		},
		DeleteFunc: func(any) { p.Trigger() },
	}); err != nil {
		return err
	}

	if p.opts.CapacityBuffers {
		// A buffer created, deleted or resolved again, or its template
		// changed: its room is planned again.
		for _, obj := range []client.Object{&autoscalingv1beta1.CapacityBuffer{}, &corev1.PodTemplate{}} {
			inf, err := c.GetInformer(ctx, obj)
			if err != nil {
				return fmt.Errorf("%T informer: %w", obj, err)
			}
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { p.Trigger() },
				UpdateFunc: func(any, any) { p.Trigger() },
				DeleteFunc: func(any) { p.Trigger() },
			}); err != nil {
				return err
			}
		}
	}

	pools, err := c.GetInformer(ctx, &karpv1.NodePool{})
	if err != nil {
		return fmt.Errorf("NodePool informer: %w", err)
	}
	_, err = pools.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { p.Trigger() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*karpv1.NodePool)
			n, ok2 := newObj.(*karpv1.NodePool)
			if ok1 && ok2 && (o.Generation != n.Generation || o.IsTrue(karpv1.ConditionTypeReady) != n.IsTrue(karpv1.ConditionTypeReady)) {
				p.Trigger()
			}
		},
	})
	return err
}

func unwrap(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// listPods returns every cached pod, the cache's own objects: read-only,
// never to be changed (a shallow copy may be); through the informer's
// store when watch found it (hand-offs run 16 at a time, each listing).
func (p *Provisioner) listPods(ctx context.Context) ([]*corev1.Pod, error) {
	return nodeclaimutil.ListPods(ctx, p.podStore, p.kube)
}
