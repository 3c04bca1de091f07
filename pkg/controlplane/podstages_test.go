package controlplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// podOn creates a pod bound to node by its hostname selector.
func podOn(t *testing.T, cs kubernetes.Interface, ns, name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	p, err := cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Create(t.Context(), kwokNode(name, "4", "8Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
}

// A deleted pod that stands for a preStop hook (the peer's delay
// annotation) is removed when its grace period ends if the hook is longer,
// not at once and not after the hook's 300 s; one without the annotation
// goes at once.
func TestKwokPodPreStopDelay(t *testing.T) {
	cs := clientset(t)
	ns := namespace(t, cs)
	node := "kwok-" + ns
	testNode(t, cs, node)
	hooked := podOn(t, cs, ns, "hooked", node, func(p *corev1.Pod) {
		p.Annotations = map[string]string{controlplane.PodDeleteDelayAnnotation: "300s"}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](4)
	})
	plain := podOn(t, cs, ns, "plain", node, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](4) })
	for _, p := range []*corev1.Pod{hooked, plain} {
		eventually(t, p.Name+" runs", func(ctx context.Context) error {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("phase %s", got.Status.Phase)
			}
			return nil
		})
	}
	begin := time.Now()
	for _, p := range []*corev1.Pod{hooked, plain} {
		if err := cs.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		}
	}
	eventually(t, "the pod without a hook is removed", gone(plain.Name))
	if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), hooked.Name, metav1.GetOptions{}); err != nil && time.Since(begin) < 3*time.Second {
		t.Fatalf("the hooked pod went %s after its deletion, before its 4 s grace period: %v", time.Since(begin), err)
	}
	eventually(t, "the hooked pod is removed at the end of its grace period", gone(hooked.Name))
	if d := time.Since(begin); d < 3*time.Second {
		t.Fatalf("the hooked pod went after %s, before its 4 s grace period ended", d)
	}
}

// A pod labelled kwok.x-k8s.io/stage=unhealthy runs but stays unready.
func TestKwokPodUnready(t *testing.T) {
	cs := clientset(t)
	ns := namespace(t, cs)
	node := "kwok-" + ns
	testNode(t, cs, node)
	p := podOn(t, cs, ns, "unready", node, func(p *corev1.Pod) {
		p.Labels = map[string]string{controlplane.HoldConditionsLabel: controlplane.HoldConditionsValue}
	})
	ready := podOn(t, cs, ns, "ready", node, nil)
	eventually(t, "both pods run", func(ctx context.Context) error {
		for _, name := range []string{p.Name, ready.Name} {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning || got.Status.PodIP == "" {
				return fmt.Errorf("%s: phase %s, IP %q", name, got.Status.Phase, got.Status.PodIP)
			}
		}
		return nil
	})
	isReady := func(name string) bool {
		got, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	if !isReady(ready.Name) {
		t.Fatal("the unlabelled pod runs but is not Ready")
	}
	// kwok does not come back to it: it stays unready while the other is Ready.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if isReady(p.Name) {
			t.Fatal("the pod labelled kwok.x-k8s.io/stage=unhealthy became Ready")
		}
	}
}
