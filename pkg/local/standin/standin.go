package standin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

// Mirrored are the controller settings the Deployment starts with, when
// set in the environment of `local up` (or in the controller component's
// Env). Any literal variable later added to the template is mirrored too.
var Mirrored = []string{"FEATURE_GATES", "AWS_FEATURE_GATES"}

// InstanceLabel is the label of the Deployment's pods, as the peer's chart
// sets it (its suites find the controller's pods by it).
const InstanceLabel = "app.kubernetes.io/instance"

// DefaultPoll is how often the loop reads the Deployment.
const DefaultPoll = 500 * time.Millisecond

// Component keeps the stand-in Deployment (see the package doc). Set the
// fields before Start; with Deployment empty it does nothing.
type Component struct {
	// Namespace and Deployment name the Deployment.
	Namespace, Deployment string
	// Controller is the controller component the Deployment stands for.
	Controller *ctrlproc.Component
	// Poll is how often the Deployment is read (DefaultPoll when zero).
	Poll time.Duration

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	applied string // the template's fingerprint the controller runs with
	managed map[string]bool
}

var _ stack.Component = (*Component)(nil)

// Name implements stack.Component.
func (c *Component) Name() string { return "controller-deployment" }

// Enabled reports whether a Deployment was asked for.
func (c *Component) Enabled() bool { return c.Deployment != "" }

// Set parses NAMESPACE/NAME (the flag's value).
func (c *Component) Set(s string) error {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("%q: namespace %q: %s", s, ns, strings.Join(errs, "; "))
	}
	// The Lease is NAME-leader-election: keep room for the suffix.
	if errs := validation.IsDNS1123Subdomain(name + "-leader-election"); len(errs) > 0 {
		return fmt.Errorf("%q: name %q: %s", s, name, strings.Join(errs, "; "))
	}
	c.Namespace, c.Deployment = ns, name
	return nil
}

// String is the flag's value.
func (c *Component) String() string {
	if c.Deployment == "" {
		return ""
	}
	return c.Namespace + "/" + c.Deployment
}

// Type is the flag's value type.
func (c *Component) Type() string { return "namespace/name" }

// LeaseName is the Lease naming the Deployment's current pod.
func (c *Component) LeaseName() string { return c.Deployment + "-leader-election" }

// Start implements stack.Component.
func (c *Component) Start(ctx context.Context, env stack.Env) error {
	if !c.Enabled() {
		return nil
	}
	if c.Controller == nil || c.Controller.None {
		return errors.New("--controller-deployment stands for the stack's controller: it needs --controller-replicas 1 or more")
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	cs, err := kubernetes.NewForConfig(env.ControlPlane.RESTConfig())
	if err != nil {
		return err
	}
	progress := func(format string, args ...any) {
		if env.Progress != nil {
			fmt.Fprintf(env.Progress, "controller-deployment: "+format+"\n", args...)
		}
	}
	if err := ensureNamespace(ctx, cs, c.Namespace); err != nil {
		return err
	}
	if err := stack.EnsureSystemNode(ctx, cs); err != nil {
		return err
	}
	d, created, err := c.ensureDeployment(ctx, cs)
	if err != nil {
		return err
	}
	c.managed = map[string]bool{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		c.managed[e.Name] = true
	}
	if created {
		c.applied = fingerprint(d.Spec.Template)
	} // else: the first sync restarts the controller with the template's env
	progress("Deployment %s/%s stands for the controller (pods on Node %s; the Lease %s/%s names its newest ready pod)",
		c.Namespace, c.Deployment, stack.SystemNodeName, c.Namespace, c.LeaseName())
	loopCtx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.Poll)
		defer t.Stop()
		for {
			if err := c.sync(loopCtx, cs, progress); err != nil && loopCtx.Err() == nil {
				progress("%v", err)
			}
			select {
			case <-loopCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop implements stack.Component.
func (c *Component) Stop(ctx context.Context) error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sync restarts the controller when the template changed, then points the
// Lease at the newest ready pod.
func (c *Component) sync(ctx context.Context, cs kubernetes.Interface, progress func(string, ...any)) error {
	d, err := cs.AppsV1().Deployments(c.Namespace).Get(ctx, c.Deployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted by someone: the controller keeps its env
	}
	if err != nil {
		return err
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil
	}
	fp := fingerprint(d.Spec.Template)
	if fp != c.applied {
		vars, skipped := literalEnv(d.Spec.Template.Spec.Containers[0].Env)
		for _, name := range skipped {
			progress("env %s uses valueFrom: not mirrored", name)
		}
		for k := range vars {
			c.managed[k] = true
		}
		set := make(map[string]string, len(c.managed))
		for k := range c.managed {
			set[k] = vars[k] // "" when removed: ctrlproc unsets it
		}
		progress("pod template changed: restarting the controller with %s", describe(set))
		if err := c.Controller.Reconfigure(ctx, func(cc *ctrlproc.Component) {
			if cc.Env == nil {
				cc.Env = map[string]string{}
			}
			maps.Copy(cc.Env, set)
		}); err != nil {
			return fmt.Errorf("restarting the controller: %w", err)
		}
		c.mu.Lock()
		c.applied = fp
		c.mu.Unlock()
	}
	return c.syncLease(ctx, cs, d)
}

// syncLease writes the Lease naming the newest ready pod of the
// Deployment's current template.
func (c *Component) syncLease(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) error {
	pods, err := cs.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: InstanceLabel + "=" + c.Deployment})
	if err != nil {
		return err
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(p) {
			continue
		}
		if newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) ||
			(p.CreationTimestamp.Equal(&newest.CreationTimestamp) && p.Name > newest.Name) {
			newest = p
		}
	}
	if newest == nil {
		return nil
	}
	leases := cs.CoordinationV1().Leases(c.Namespace)
	l, err := leases.Get(ctx, c.LeaseName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.LeaseName(), Namespace: c.Namespace}}
		c.fillLease(l, newest.Name)
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	holder, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
	if holder == newest.Name {
		return nil
	}
	c.fillLease(l, newest.Name)
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func (c *Component) fillLease(l *coordinationv1.Lease, pod string) {
	now := metav1.NewMicroTime(time.Now())
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	l.Spec.HolderIdentity = ptr.To(pod + "_" + hex.EncodeToString(b))
	l.Spec.LeaseDurationSeconds = ptr.To(int32(15))
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// literalEnv returns the container's literal variables, and the names of
// those given with valueFrom.
func literalEnv(env []corev1.EnvVar) (map[string]string, []string) {
	out := make(map[string]string, len(env))
	var skipped []string
	for _, e := range env {
		if e.ValueFrom != nil {
			skipped = append(skipped, e.Name)
			continue
		}
		out[e.Name] = e.Value
	}
	return out, skipped
}

// fingerprint is what a rollout follows: the container's env and the
// template's annotations (kubectl rollout restart sets one).
func fingerprint(t corev1.PodTemplateSpec) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(t.Annotations)) {
		fmt.Fprintf(&b, "a:%s=%s\n", k, t.Annotations[k])
	}
	if len(t.Spec.Containers) > 0 {
		for _, e := range t.Spec.Containers[0].Env {
			fmt.Fprintf(&b, "e:%s=%s\n", e.Name, e.Value)
		}
	}
	return b.String()
}

func describe(vars map[string]string) string {
	if len(vars) == 0 {
		return "no mirrored settings"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		v := vars[k]
		if v == "" {
			v = "(default)"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	return nil
}

func (c *Component) ensureDeployment(ctx context.Context, cs kubernetes.Interface) (*appsv1.Deployment, bool, error) {
	var env []corev1.EnvVar
	for _, name := range Mirrored {
		v, ok := c.Controller.Env[name]
		if !ok {
			v = os.Getenv(name)
		}
		if v != "" {
			env = append(env, corev1.EnvVar{Name: name, Value: v})
		}
	}
	labels := map[string]string{InstanceLabel: c.Deployment, "app.kubernetes.io/name": c.Deployment}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.Deployment, Namespace: c.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelHostname: stack.SystemNodeName},
					Tolerations:  []corev1.Toleration{{Key: stack.SystemTaint.Key, Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:  "controller",
						Image: "dovetail.local/controller-stand-in",
						Env:   env,
					}},
				},
			},
		},
	}
	got, err := cs.AppsV1().Deployments(c.Namespace).Create(ctx, d, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = cs.AppsV1().Deployments(c.Namespace).Get(ctx, c.Deployment, metav1.GetOptions{})
		if err == nil && len(got.Spec.Template.Spec.Containers) == 0 {
			err = errors.New("it has no container")
		}
		if err != nil {
			return nil, false, fmt.Errorf("deployment %s/%s: %w", c.Namespace, c.Deployment, err)
		}
		return got, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("deployment %s/%s: %w", c.Namespace, c.Deployment, err)
	}
	return got, true, nil
}
