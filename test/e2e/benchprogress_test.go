package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

var (
	podListGVK      = schema.GroupVersionKind{Version: "v1", Kind: "PodList"}
	nodeListGVK     = schema.GroupVersionKind{Version: "v1", Kind: "NodeList"}
	runningSelector = fields.OneTermEqualSelector("status.phase", "Running")
)

// countPods counts the namespace's pods and those Running from metadata
// only (a field selector on status.phase, read as PartialObjectMetadata):
// at 30,000 pods a full list every poll would load the API server more
// than the controller under test does.
func countPods(ctx context.Context, ns string) (all, running int, err error) {
	count := func(opts ...client.ListOption) (int, error) {
		n := 0
		cont := ""
		for {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(podListGVK)
			o := append([]client.ListOption{client.InNamespace(ns), client.Limit(5000), client.Continue(cont)}, opts...)
			if err := kube.List(ctx, list, o...); err != nil {
				return 0, err
			}
			n += len(list.Items)
			if cont = list.Continue; cont == "" {
				return n, nil
			}
		}
	}
	if all, err = count(); err != nil {
		return 0, 0, err
	}
	running, err = count(client.MatchingFieldsSelector{Selector: runningSelector})
	return all, running, err
}

// countManagedNodes counts the nodes of a NodePool from their metadata
// only (a list of 3,000 whole Nodes every 30 s is load of its own on the
// stack's API server). Its error is for the caller to report: at fleet
// size a loaded API server times a list out now and then, and a progress
// line must not end the run.
func countManagedNodes(ctx context.Context) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(nodeListGVK)
	if err := kube.List(ctx, list, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// waitRunningQuietly waits for want Running pods, counting them with
// countPods every 10 s (two paged lists of every pod of the namespace:
// at 30,000 pods load of its own on the stack), and prints a progress
// line every 30 s (pods
// Running, nodes, the controller's resident memory now and at peak).
// With snapshot set (see profiling), a heap profile is saved with each
// progress line.
func waitRunningQuietly(b *testing.B, s *scenario, r *ctrlproc.Replica, want int, timeout time.Duration, snapshot func(string)) {
	b.Helper()
	begin := time.Now()
	deadline := begin.Add(timeout)
	lastLine := time.Time{}
	for {
		all, running, err := countPods(s.ctx, s.ns)
		if err == nil && running >= want {
			return
		}
		if time.Since(lastLine) >= 30*time.Second {
			lastLine = time.Now()
			rss, hwm := procMemory(r.PID())
			load, _ := os.ReadFile("/proc/loadavg")
			nodes, nodesErr := countManagedNodes(s.ctx)
			fmt.Fprintf(os.Stderr, "%6.0fs pods %d running %d/%d (err %v) | nodes %d (err %v) | controller RSS %.0f MiB (peak %.0f) | load %s\n",
				time.Since(begin).Seconds(), all, running, want, err, nodes, nodesErr, float64(rss)/(1<<20), float64(hwm)/(1<<20),
				strings.Join(strings.Fields(string(load))[:3], " "))
			if snapshot != nil {
				snapshot(fmt.Sprintf("%05.0fs", time.Since(begin).Seconds()))
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d pods Running after %s: got %d (err %v)", want, timeout, running, err)
		}
		time.Sleep(10 * time.Second) // a poll interval, not a synchronisation
	}
}

// procMemory is a process's current and peak resident memory (VmRSS and
// VmHWM, bytes); zero when unreadable.
func procMemory(pid int) (rss, hwm int64) {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		for key, dst := range map[string]*int64{"VmRSS:": &rss, "VmHWM:": &hwm} {
			if rest, ok := strings.CutPrefix(line, key); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					*dst = kb << 10
				}
			}
		}
	}
	return rss, hwm
}

// profiling turns on the controller's pprof server when
// DOVETAIL_BENCH_PPROF names a directory: the controller restarted by
// freshController then serves profiles on a free loopback port, and the
// returned function (called every time a sample is wanted) saves a heap
// profile there, named by the seconds since begin. It returns nil when
// the variable is unset.
func profiling(b *testing.B) (snapshot func(label string)) {
	dir := os.Getenv("DOVETAIL_BENCH_PPROF")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := ctrl.Args
	ctrl.Args = append(append([]string(nil), args...), "--profiling-bind-address", addr)
	b.Cleanup(func() { ctrl.Args = args })
	return func(label string) {
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap")
		if err != nil {
			fmt.Fprintf(os.Stderr, "heap profile %s: %v\n", label, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, "heap-"+label+".pb.gz"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "heap profile %s: %v\n", label, err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
}

// auditUsers are the users whose requests the API server logs
// (DOVETAIL_E2E_AUDIT=1: the controller's identity; otherwise none).
func auditUsers() []string {
	if os.Getenv("DOVETAIL_E2E_AUDIT") == "" {
		return nil
	}
	return []string{ctrlproc.User}
}

// softMemoryLimit restarts the controller with GOMEMLIMIT set (the Go
// runtime's soft memory limit, what the chart's controller.goMemLimit
// sets) when DOVETAIL_BENCH_GOMEMLIMIT is set, and restores it after the
// benchmark. It returns the limit ("" for none).
func softMemoryLimit(b *testing.B) string {
	limit := os.Getenv("DOVETAIL_BENCH_GOMEMLIMIT")
	if limit == "" {
		return ""
	}
	set := func(v string) func(*ctrlproc.Component) {
		return func(c *ctrlproc.Component) {
			if c.Env == nil {
				c.Env = map[string]string{}
			}
			if v == "" {
				delete(c.Env, "GOMEMLIMIT")
			} else {
				c.Env["GOMEMLIMIT"] = v
			}
		}
	}
	if err := ctrl.Reconfigure(context.Background(), set(limit)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ctrl.Reconfigure(context.Background(), set("")) })
	return limit
}

// fleetTimeouts runs the controller with the product's own NodeClaim
// launch and registration timeouts (5 and 15 minutes,
// --liveness-time-scale 1) for the benchmark, instead of the shared
// stack's TimeScale (0.1: 30 s and 90 s). At fleet size kwok, the
// scheduler and the API server share two cores with the controller, a
// node can take minutes to register, and the scaled-down timeout deleted
// NodeClaims whose nodes were merely late (25 in a 3,000-node run). The
// flag comes after the stack's own, so it wins; the controller restarted
// by freshController gets it.
func fleetTimeouts(b *testing.B) {
	args := ctrl.Args
	ctrl.Args = append(append([]string(nil), args...), "--liveness-time-scale", "1")
	b.Cleanup(func() { ctrl.Args = args })
}

// drainFirst deletes the benchmark's namespace and waits for its pods to
// go before the scenario's own cleanup runs (cleanups run last first),
// with a deadline that grows with the pods: the scenario allows 3
// minutes, which 3,000 pods on a loaded machine overrun (1,887 were left),
// failing a run whose figures were already taken.
func drainFirst(b *testing.B, s *scenario, pods int) {
	b.Cleanup(func() {
		ctx := context.Background()
		_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
		wait := 3*time.Minute + time.Duration(pods)*100*time.Millisecond
		deadline := time.Now().Add(wait)
		for {
			all, _, err := countPods(ctx, s.ns)
			if err == nil && all == 0 {
				return
			}
			if time.Now().After(deadline) {
				b.Errorf("%d of the benchmark's pods left after %s (err %v)", all, wait, err)
				return
			}
			time.Sleep(5 * time.Second) // a poll interval, not a synchronisation
		}
	})
}
