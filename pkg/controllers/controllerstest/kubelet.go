package controllerstest

import (
	"context"
	"path"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// KubeletOptions tunes the simulated kubelet.
type KubeletOptions struct {
	// Skip, when set, keeps the instances it returns true for from ever
	// registering a Node (a node that never joins).
	Skip func(instance *karpv1.NodeClaim) bool
	// Interval between looks at the cloud; 50 ms when zero.
	Interval time.Duration
}

// Kubelet creates a Node for every instance of the Env's cloud (see the
// package doc). Stop it with Stop, or let the test's cleanup do it.
type Kubelet struct {
	env    *Env
	opts   KubeletOptions
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	registered map[string]string // providerID -> node name
}

// StartKubelet starts the simulated kubelet.
func (e *Env) StartKubelet(opts KubeletOptions) *Kubelet {
	if opts.Interval <= 0 {
		opts.Interval = 50 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(e.ctx)
	k := &Kubelet{env: e, opts: opts, cancel: cancel, done: make(chan struct{}), registered: map[string]string{}}
	go k.run(ctx)
	e.T.Cleanup(k.Stop)
	return k
}

// Stop stops the kubelet and waits for it.
func (k *Kubelet) Stop() {
	k.cancel()
	<-k.done
}

// NodeName returns the name of the node registered for the providerID, or
// "" when none was.
func (k *Kubelet) NodeName(providerID string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.registered[providerID]
}

func (k *Kubelet) run(ctx context.Context) {
	defer close(k.done)
	tick := time.NewTicker(k.opts.Interval)
	defer tick.Stop()
	for {
		for _, inst := range k.env.Cloud.Instances() {
			if ctx.Err() != nil {
				return
			}
			k.mu.Lock()
			_, done := k.registered[inst.Status.ProviderID]
			k.mu.Unlock()
			if done || (k.opts.Skip != nil && k.opts.Skip(inst)) {
				continue
			}
			node := k.env.NodeFor(inst)
			if err := k.env.Client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
				continue // try again on the next tick
			}
			k.mu.Lock()
			k.registered[inst.Status.ProviderID] = node.Name
			k.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// NodeFor returns the Node a freshly booted instance registers: named after
// the instance (with the Env's prefix), labelled with the instance's
// labels and hostname, tainted with karpenter.sh/unregistered and the
// NodeClaim's taints and startup taints, and reporting the instance's
// capacity and allocatable.
func (e *Env) NodeFor(inst *karpv1.NodeClaim) *corev1.Node {
	name := e.Prefix + "-" + path.Base(inst.Status.ProviderID)
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	labels := map[string]string{corev1.LabelHostname: name}
	for k, v := range inst.Labels {
		labels[k] = v
	}
	taints := []corev1.Taint{karpv1.UnregisteredNoExecuteTaint}
	taints = append(taints, inst.Spec.Taints...)
	taints = append(taints, inst.Spec.StartupTaints...)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: inst.Status.ProviderID, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    inst.Status.Capacity.DeepCopy(),
			Allocatable: inst.Status.Allocatable.DeepCopy(),
		},
	}
}
