package kubenode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/userdata"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// Well-known labels and annotations the booter writes.
const (
	LabelArch         = "kubernetes.io/arch"
	LabelOS           = "kubernetes.io/os"
	LabelHostname     = "kubernetes.io/hostname"
	LabelInstanceType = "node.kubernetes.io/instance-type"
	LabelZone         = "topology.kubernetes.io/zone"
	LabelRegion       = "topology.kubernetes.io/region"
	// AnnotationInstance names the emulated instance a Node belongs to.
	AnnotationInstance = "awsemu.dovetail.sh/instance-id"
	// TagNodeClaim is the instance tag naming its NodeClaim.
	TagNodeClaim = "karpenter.sh/nodeclaim"
	// AnnotationNodeFault names the condition type the booter wrote for
	// the instance's fault (awsemu.NodeFault), so it knows what to remove
	// once the fault is gone.
	AnnotationNodeFault = "awsemu.dovetail.sh/node-fault"
)

// DefaultStartupTaintDelay is how long after registration the stand-in node
// agent removes the taints of Options.StartupTaintKeys (x the emulator's
// TimeScale).
const DefaultStartupTaintDelay = 3 * time.Second

// Options configure a Booter.
type Options struct {
	// Catalog gives capacity and allocatable per type; default
	// catalog.Builtin().
	Catalog *catalog.Catalog
	// StartupTaintDelay overrides DefaultStartupTaintDelay (before the
	// emulator's TimeScale).
	StartupTaintDelay time.Duration
	// StartupTaintKeys are the taint keys the stand-in node agent removes,
	// as the DaemonSet agent owning each key (a CNI, a storage driver) does
	// in a real cluster once it is ready. Nothing else is removed: a
	// NodeClaim's startup taints that no agent owns stay, so its node never
	// initializes, as in a real cluster (karpenter itself never removes
	// startup taints). Empty: no agent runs.
	StartupTaintKeys []string
	// Clock times the agent; default the emulator's clock.
	Clock clock.Clock
	// Log receives one line per node created, agent action and failure.
	Log logr.Logger
}

// Booter plays the kubelets of the emulator's instances: a running
// instance registers its Node, a terminating one loses it.
type Booter struct {
	emu   *awsemu.Emulator
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	opts  Options
	queue workqueue.TypedRateLimitingInterface[string]
	wg    sync.WaitGroup
	stop  context.CancelFunc

	mu    sync.Mutex
	names map[string]string // instance id -> node name
	errs  map[string]error  // instance id -> last error
}

// Start begins booting nodes for the emulator's instances, those already
// running included, and returns once it is watching. It stops when ctx is
// done or Close is called.
func Start(ctx context.Context, cfg *rest.Config, emu *awsemu.Emulator, opts Options) (*Booter, error) {
	if emu == nil || cfg == nil {
		return nil, errors.New("kubenode: a rest.Config and an emulator are required")
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubenode: kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubenode: dynamic client: %w", err)
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Builtin()
	}
	if opts.StartupTaintDelay == 0 {
		opts.StartupTaintDelay = DefaultStartupTaintDelay
	}
	opts.StartupTaintDelay = time.Duration(float64(opts.StartupTaintDelay) * emu.Options().TimeScale)
	if opts.Clock == nil {
		opts.Clock = emu.Options().Clock
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &Booter{
		emu: emu, kube: kube, dyn: dyn, opts: opts, stop: cancel,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second)),
		names: map[string]string{}, errs: map[string]error{},
	}
	events := emu.Subscribe(ctx) // before listing, so nothing is missed
	for _, in := range emu.Instances() {
		b.queue.Add(in.ID)
	}
	b.wg.Add(3)
	go func() {
		defer b.wg.Done()
		for ev := range events {
			b.queue.Add(ev.Instance.ID)
		}
	}()
	go func() {
		defer b.wg.Done()
		<-ctx.Done()
		b.queue.ShutDown()
	}()
	go func() {
		defer b.wg.Done()
		for b.work(ctx) {
		}
	}()
	return b, nil
}

// Close stops the booter and waits for it. Nodes stay.
func (b *Booter) Close() {
	b.stop()
	b.wg.Wait()
}

// Err returns the last error booting an instance's node (bad user data,
// API failures), nil if none.
func (b *Booter) Err(instanceID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs[instanceID]
}

func (b *Booter) work(ctx context.Context) bool {
	id, shutdown := b.queue.Get()
	if shutdown {
		return false
	}
	defer b.queue.Done(id)
	err := b.reconcile(ctx, id)
	b.mu.Lock()
	if err != nil {
		b.errs[id] = err
	} else {
		delete(b.errs, id)
	}
	b.mu.Unlock()
	var permanent *permanentError
	switch {
	case err == nil || errors.As(err, &permanent):
		if err != nil {
			b.opts.Log.Error(err, "instance cannot boot", "instance", id)
		}
		b.queue.Forget(id)
	case ctx.Err() != nil:
	default:
		b.opts.Log.V(1).Info("retrying", "instance", id, "error", err.Error())
		b.queue.AddRateLimited(id)
	}
	return true
}

// permanentError is a failure retrying cannot fix (bad user data).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func (b *Booter) reconcile(ctx context.Context, id string) error {
	in, ok := b.emu.Instance(id)
	b.mu.Lock()
	name := b.names[id]
	b.mu.Unlock()
	if !ok || in.State == awsemu.StateShuttingDown || in.State == awsemu.StateTerminated {
		if name == "" && ok {
			name = in.PrivateDNSName
		}
		if name == "" {
			return nil
		}
		err := b.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", name, err)
		}
		b.mu.Lock()
		delete(b.names, id)
		b.mu.Unlock()
		return nil
	}
	if in.State != awsemu.StateRunning {
		return nil
	}
	node, err := NodeFor(in, b.emu.Options().Region, b.emu.Options().KubernetesVersion, b.opts.Catalog)
	if err != nil {
		return &permanentError{err}
	}
	_, err = b.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Registered before (booter restart or a re-delivered event), or a
		// stale Node of an earlier instance with the same address: that one
		// goes, and the next attempt registers this instance.
		old, gerr := b.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("reading node %s: %w", node.Name, gerr)
		}
		if old.Spec.ProviderID != node.Spec.ProviderID {
			if derr := b.kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
				return fmt.Errorf("deleting stale node %s: %w", node.Name, derr)
			}
			return fmt.Errorf("node %s belonged to %s; replacing it", node.Name, old.Spec.ProviderID)
		}
	case err != nil:
		return fmt.Errorf("creating node %s: %w", node.Name, err)
	default:
		b.opts.Log.Info("node registered", "node", node.Name, "instance", id, "type", in.InstanceType)
		if len(b.opts.StartupTaintKeys) > 0 {
			b.wg.Add(1)
			go b.agent(ctx, node.Name)
		}
	}
	b.mu.Lock()
	b.names[id] = node.Name
	b.mu.Unlock()
	return b.syncBoot(ctx, node.Name, in)
}

// syncBoot keeps what the instance's kubelet and node agents report in
// step with the emulator: the boot id (it changes with each reboot) and
// the instance's node fault, written as a status condition under
// controlplane.HoldConditionsLabel (so kwok leaves it) and removed, with
// the label, once the fault is cleared or a reboot cleared it.
func (b *Booter) syncBoot(ctx context.Context, name string, in awsemu.Instance) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := b.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		f, wrote := in.NodeFault, node.Annotations[AnnotationNodeFault]
		if f == nil && wrote != "" {
			// The fault is gone: the condition, the marker and the hold go.
			node.Status.Conditions = slices.DeleteFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return string(c.Type) == wrote })
			if node, err = b.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				return err
			}
			delete(node.Annotations, AnnotationNodeFault)
			delete(node.Labels, controlplane.HoldConditionsLabel)
			if node, err = b.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		if f != nil && (wrote != f.Type || node.Labels[controlplane.HoldConditionsLabel] != controlplane.HoldConditionsValue) {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			node.Labels[controlplane.HoldConditionsLabel] = controlplane.HoldConditionsValue
			node.Annotations[AnnotationNodeFault] = f.Type
			if node, err = b.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		changed := false
		if id := awsemu.BootID(in); node.Status.NodeInfo.BootID != id {
			node.Status.NodeInfo.BootID, changed = id, true
		}
		if f != nil {
			cond := corev1.NodeCondition{Type: corev1.NodeConditionType(f.Type), Status: corev1.ConditionStatus(f.Status), Reason: f.Reason,
				Message: "injected by dovetail local fault node", LastTransitionTime: metav1.NewTime(f.Since), LastHeartbeatTime: metav1.NewTime(f.Since)}
			i := slices.IndexFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == cond.Type })
			switch {
			case i < 0:
				node.Status.Conditions, changed = append(node.Status.Conditions, cond), true
			case node.Status.Conditions[i].Status != cond.Status || node.Status.Conditions[i].Reason != cond.Reason ||
				!node.Status.Conditions[i].LastTransitionTime.Equal(&cond.LastTransitionTime):
				node.Status.Conditions[i], changed = cond, true
			}
		}
		if !changed {
			return nil
		}
		_, err = b.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("syncing the boot and faults of node %s: %w", name, err)
	}
	return nil
}

// agent is the stand-in node agent: after the delay it removes the taints
// of Options.StartupTaintKeys, as a CNI or storage agent does once it is
// ready.
func (b *Booter) agent(ctx context.Context, name string) {
	defer b.wg.Done()
	select {
	case <-b.opts.Clock.After(b.opts.StartupTaintDelay):
	case <-ctx.Done():
		return
	}
	remove := map[string]bool{}
	for _, k := range b.opts.StartupTaintKeys {
		remove[k] = true
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := b.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := node.Spec.Taints[:0:0]
		for _, t := range node.Spec.Taints {
			if remove[t.Key] {
				continue
			}
			kept = append(kept, t)
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err = b.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		b.opts.Log.Error(err, "removing startup taints", "node", name)
		return
	}
	b.opts.Log.V(1).Info("startup taints removed", "node", name)
}

// NodeFor builds the Node an instance's kubelet registers: named after the
// private DNS name, with the provider id aws:///ZONE/ID, the well-known
// labels plus the user data's labels, the user data's taints, and capacity
// and allocatable of its type under the user data's kubelet settings. Bad
// user data is an error naming the format and line.
func NodeFor(in awsemu.Instance, region, kubernetesVersion string, cat *catalog.Catalog) (*corev1.Node, error) {
	cfg, err := userdata.Parse(in.UserData)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", in.ID, err)
	}
	t, ok := cat.Type(in.InstanceType)
	if !ok {
		return nil, fmt.Errorf("instance %s: type %s is not in the catalog", in.ID, in.InstanceType)
	}
	settings := catalog.KubeletSettings{
		MaxPods:        cfg.MaxPods,
		KubeReserved:   cfg.KubeReserved,
		SystemReserved: cfg.SystemReserved,
		EvictionHard:   cfg.EvictionHard,
		EvictionSoft:   cfg.EvictionSoft,
	}
	osImage := "Amazon Linux 2023"
	root := "/dev/xvda"
	switch cfg.Format {
	case userdata.FormatBottlerocket:
		settings.AMIFamily, osImage, root = catalog.AMIFamilyBottlerocket, "Bottlerocket OS", "/dev/xvdb"
	case userdata.FormatBootstrap:
		settings.AMIFamily, osImage = catalog.AMIFamilyAL2, "Amazon Linux 2"
	default:
		settings.AMIFamily = catalog.AMIFamilyAL2023
	}
	for _, bd := range in.BlockDevices {
		if bd.DeviceName == root && bd.VolumeSizeGiB > 0 {
			q := resource.MustParse(fmt.Sprintf("%dGi", bd.VolumeSizeGiB))
			settings.EphemeralVolumeSize = &q
		}
	}
	if errs := settings.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("instance %s: user data (%s): %w", in.ID, cfg.Format, errs.ToAggregate())
	}
	it := cloudprovider.InstanceType{Capacity: t.Capacity(settings), Overhead: t.Overhead(settings)}
	arch := t.Arch
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	for k, v := range map[string]string{
		LabelArch: arch, LabelOS: "linux", LabelHostname: in.PrivateDNSName,
		LabelInstanceType: in.InstanceType, LabelZone: in.Zone, LabelRegion: region,
	} {
		labels[k] = v
	}
	taints := append([]corev1.Taint(nil), cfg.Taints...)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   in.PrivateDNSName,
			Labels: labels,
			Annotations: map[string]string{
				AnnotationInstance:                                       in.ID,
				"alpha.kubernetes.io/provided-node-ip":                   in.PrivateIP,
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: fmt.Sprintf("aws:///%s/%s", in.Zone, in.ID),
			Taints:     taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity,
			Allocatable: it.Allocatable(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: in.PrivateIP},
				{Type: corev1.NodeHostName, Address: in.PrivateDNSName},
				{Type: corev1.NodeInternalDNS, Address: in.PrivateDNSName},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture: arch, OperatingSystem: "linux", OSImage: osImage,
				KubeletVersion: "v" + kubernetesVersion + ".0", ContainerRuntimeVersion: "containerd://2.1.0",
				MachineID: strings.TrimPrefix(in.ID, "i-"), SystemUUID: "ec2" + strings.TrimPrefix(in.ID, "i-0"),
				BootID: in.ID, KernelVersion: "6.12.0", KubeProxyVersion: "",
			},
		},
	}, nil
}
