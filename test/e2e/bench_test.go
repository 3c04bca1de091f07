package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

// BenchmarkScaleUp1000 measures the figures of a 1,000-pod scale-up on the
// local stack: the mixed workload of TestMixed500Pods at twice the
// replicas (the volume's Deployment stays at one). It is slow, so it runs
// only when asked:
//
//	go test -run '^$' -bench ScaleUp1000 -benchtime 1x -timeout 20m ./test/e2e/
//
// Reported: seconds from applying the manifests to every pod Running; the
// controller's peak resident memory during the run (VmHWM of the
// controller's own process, restarted just before so the peak is this
// run's); the AWS API calls the emulator recorded; the API server requests
// the controller's client made (client-go's rest_client_requests_total);
// nodes and $/h, and what `dovetail simulate` plans for the same manifests.
func BenchmarkScaleUp1000(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "mixed.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	// Double every Deployment but the volume's (web gets one more), to
	// 1,000 pods.
	var doubled []byte
	for _, obj := range decode(b, data) {
		if obj.GetKind() == "Deployment" && obj.GetName() != "db" {
			n, ok, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas")
			var replicas int64
			switch v := n.(type) {
			case int64:
				replicas = v
			case float64: // JSON numbers decode as float64
				replicas = int64(v)
			default:
				ok = false
			}
			if err != nil || !ok {
				b.Fatalf("Deployment %s: replicas %v (%T): %v", obj.GetName(), n, n, err)
			}
			want := 2 * replicas
			if obj.GetName() == "web" {
				want++ // 2 x 499 + this one + db's pod = 1,000
			}
			if err := unstructured.SetNestedField(obj.Object, want, "spec", "replicas"); err != nil {
				b.Fatal(err)
			}
		}
		out, err := yaml.Marshal(obj.Object)
		if err != nil {
			b.Fatal(err)
		}
		doubled = append(append(doubled, []byte("---\n")...), out...)
	}
	file := filepath.Join(b.TempDir(), "mixed-1000.yaml")
	if err := os.WriteFile(file, doubled, 0o644); err != nil {
		b.Fatal(err)
	}

	for b.Loop() {
		b.StopTimer()
		plan := simulatePlan(b, file).TotalPricePerHour
		r, reqBefore := freshController(b)
		s := newScenario(b)

		b.StartTimer()
		begin := time.Now()
		stopTimeline := timeline(b, s.ns, begin)
		s.apply(doubled)
		s.waitRunning(1000, 10*time.Minute)
		elapsed := time.Since(begin)
		b.StopTimer()
		stopTimeline()

		rss, err := r.PeakRSS()
		if err != nil {
			b.Fatal(err)
		}
		reqAfter, err := scrape(r, "rest_client_requests_total")
		if err != nil {
			b.Fatal(err)
		}
		calls := emu().Calls()
		byAction := map[string]int{}
		for _, c := range calls {
			byAction[c.Action]++
		}
		nodes := len(nodeClaims(b))
		price := fleetPrice(b)
		// Instances launched by the scale-up (the scenario starts with none).
		launched := len(liveInstances())
		b.ReportMetric(elapsed.Seconds(), "s-to-running")
		b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(len(calls)), "aws-calls")
		b.ReportMetric(float64(len(calls))/float64(max(launched, 1)), "aws-calls/launch")
		b.ReportMetric(reqAfter-reqBefore, "apiserver-requests")
		b.ReportMetric(float64(nodes), "nodes")
		b.ReportMetric(price, "$/h")
		b.ReportMetric(plan, "simulate-$/h")
		b.Logf("1000 pods Running in %s; controller peak RSS %.1f MiB; %d AWS calls for %d instances launched (%.2f per launch) %v; %.0f API server requests; %d nodes at $%.4f/h (simulate: $%.4f/h)",
			elapsed.Round(100*time.Millisecond), float64(rss)/(1<<20), len(calls), launched, float64(len(calls))/float64(max(launched, 1)), byAction, reqAfter-reqBefore, nodes, price, plan)
		b.StartTimer() // b.Loop wants the timer running when it checks
		b.Cleanup(func() {
			_ = kube.Delete(context.Background(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "e2e-db-us-east-1a"}})
		})
	}
}

// timeline samples the scale-up every two seconds (pods unbound, bound
// and Running; NodeClaims and how far each got) and logs the samples when
// stopped, to show where the wall time goes.
func timeline(b *testing.B, ns string, begin time.Time) (stop func()) {
	done := make(chan struct{})
	var lines []string
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var pods corev1.PodList
			var ncs karpv1.NodeClaimList
			if kube.List(context.Background(), &pods, client.InNamespace(ns)) != nil || kube.List(context.Background(), &ncs) != nil {
				continue
			}
			var unbound, bound, running, launched, registered, initialized, nominated int
			unboundBy := map[string]int{}
			why := map[string]int{}
			for _, p := range pods.Items {
				switch {
				case p.Status.Phase == corev1.PodRunning:
					running++
				case p.Spec.NodeName != "":
					bound++
				default:
					unbound++
					unboundBy[p.Labels["app"]]++
					if p.Status.NominatedNodeName != "" {
						nominated++
					}
					for _, c := range p.Status.Conditions {
						if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
							why[schedulerReason(c.Message)]++
						}
					}
				}
			}
			for _, nc := range ncs.Items {
				if nc.IsTrue(karpv1.ConditionTypeLaunched) {
					launched++
				}
				if nc.IsTrue(karpv1.ConditionTypeRegistered) {
					registered++
				}
				if nc.IsTrue(karpv1.ConditionTypeInitialized) {
					initialized++
				}
			}
			lines = append(lines, fmt.Sprintf("%5.1fs pods unbound %4d (nominated %4d) bound %4d running %4d | nodeclaims %3d launched %3d registered %3d initialized %3d | unbound by app %v | scheduler says %v",
				time.Since(begin).Seconds(), unbound, nominated, bound, running, len(ncs.Items), launched, registered, initialized, unboundBy, topReasons(why, 3)))
		}
	}()
	return func() {
		close(done)
		<-finished
		// Straight to stderr: a benchmark's log is cut short.
		fmt.Fprintf(os.Stderr, "timeline of %s:\n%s\n", b.Name(), strings.Join(lines, "\n"))
	}
}

// schedulerReason is the part of a PodScheduled=False message before the
// preemption note, with the node counts kept (they say what blocks).
func schedulerReason(msg string) string {
	if i := strings.Index(msg, " preemption:"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// topReasons are the n most frequent reasons, with their counts.
func topReasons(why map[string]int, n int) []string {
	keys := make([]string, 0, len(why))
	for k := range why {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return why[keys[i]] > why[keys[j]] || why[keys[i]] == why[keys[j]] && keys[i] < keys[j]
	})
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, fmt.Sprintf("%d×%q", why[k], k))
	}
	return out
}

// BenchmarkScaleKwok measures the controller at fleet size: NODES nodes
// (env DOVETAIL_BENCH_NODES, default 3,000) with ten pods each, one
// Deployment pinned to one instance type (m6g.xlarge: 4 vCPU; 380m per
// pod makes ten a node), on the local stack's kwok nodes. It is far too
// slow for make test:
//
//	DOVETAIL_BENCH_NODES=3000 go test -run '^$' -bench ScaleKwok -benchtime 1x -timeout 3h ./test/e2e/
//
// Reported: seconds to all Running, the controller's peak RSS (target
// 300 MiB at 3,000 nodes), its API server requests per pod (counted by its
// own client, rest_client_requests_total; target 4), and the peak RSS of
// this stack's kube-apiserver and etcd, to show the run fits the machine.
// A progress line goes to stderr every 30 s; with DOVETAIL_BENCH_PPROF=DIR
// the controller serves pprof (--profiling-bind-address) and a heap
// profile is saved in DIR with each progress line and at the end. With
// DOVETAIL_E2E_AUDIT=1 the stack's API server keeps an audit log of the
// controller's identity, and its requests are also counted there, by user
// agent (server-requests/pod). DOVETAIL_BENCH_GOMEMLIMIT=220MiB runs the
// controller with that soft memory limit (GOMEMLIMIT). The pods go to a
// NodePool of the benchmark's own without limits (the examples' pools
// stop at 1,000 cpu each), and the controller runs with the product's
// launch and registration timeouts (fleetTimeouts), not the stack's
// scaled-down ones.
func BenchmarkScaleKwok(b *testing.B) {
	nodes := 3000
	if v := os.Getenv("DOVETAIL_BENCH_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("DOVETAIL_BENCH_NODES=%q: want a positive integer", v)
		}
		nodes = n
	}
	pods := 10 * nodes
	manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: fleet
spec:
  replicas: %d
  selector:
    matchLabels: {app: fleet}
  template:
    metadata:
      labels: {app: fleet}
    spec:
      nodeSelector:
        e2e: fleet
        node.kubernetes.io/instance-type: m6g.xlarge
      containers:
        - name: fleet
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: 380m, memory: 256Mi}
`, pods)
	snapshot := profiling(b)
	fleetTimeouts(b)
	if limit := softMemoryLimit(b); limit != "" {
		b.Logf("controller GOMEMLIMIT=%s", limit)
	}
	for b.Loop() {
		b.StopTimer()
		r, reqBefore := freshController(b)
		s := newScenario(b)
		drainFirst(b, s, pods)
		// A pool of its own without limits: the examples' pools stop at
		// 1,000 cpu each (500 of these nodes between them).
		s.pool("fleet", nil)
		audit := stk.ControlPlane().AuditLogPath()
		var auditSkip int
		if audit != "" {
			var err error
			if _, auditSkip, err = controlplane.CountAudit(audit, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		begin := time.Now()
		s.apply([]byte(manifest))
		waitRunningQuietly(b, s, r, pods, 3*time.Hour, snapshot)
		elapsed := time.Since(begin)
		b.StopTimer()
		if snapshot != nil {
			snapshot("end")
		}
		rss, err := r.PeakRSS()
		if err != nil {
			b.Fatal(err)
		}
		reqAfter, err := scrape(r, "rest_client_requests_total")
		if err != nil {
			b.Fatal(err)
		}
		apiRSS, etcdRSS := stackPeakRSS(b, "kube-apiserver"), stackPeakRSS(b, "etcd")
		var got int
		eventually(b, 5*time.Minute, "the managed nodes counted", func() (bool, error) {
			n, err := countManagedNodes(s.ctx)
			got = n
			return err == nil, err
		})
		calls := len(emu().Calls())
		b.ReportMetric(elapsed.Seconds(), "s-to-running")
		b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
		b.ReportMetric((reqAfter-reqBefore)/float64(pods), "requests/pod")
		b.ReportMetric(float64(apiRSS)/(1<<20), "apiserver-peak-rss-MiB")
		b.ReportMetric(float64(etcdRSS)/(1<<20), "etcd-peak-rss-MiB")
		b.ReportMetric(float64(got), "nodes")
		if audit != "" {
			counts, _, err := controlplane.CountAudit(audit, auditSkip)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(counts.ByUserAgent["dovetail"])/float64(pods), "server-requests/pod")
			// Straight to stderr too: the benchmark's log comes only after
			// its cleanup, which at fleet size takes long.
			fmt.Fprintf(os.Stderr, "API server audit log: %d requests of the controller's identity by user agent %v, by verb %v (%.2f per pod by user agent dovetail)\n",
				counts.Total, counts.ByUserAgent, counts.ByVerb, float64(counts.ByUserAgent["dovetail"])/float64(pods))
		}
		fmt.Fprintf(os.Stderr, "%d pods Running on %d nodes in %s; controller peak RSS %.1f MiB; %.0f API server requests (%.2f per pod); %d AWS calls (%.2f per node); kube-apiserver peak RSS %.0f MiB, etcd %.0f MiB\n",
			pods, got, elapsed.Round(100*time.Millisecond), float64(rss)/(1<<20), reqAfter-reqBefore, (reqAfter-reqBefore)/float64(pods),
			calls, float64(calls)/float64(max(got, 1)), float64(apiRSS)/(1<<20), float64(etcdRSS)/(1<<20))
		b.StartTimer()
	}
}

// stackPeakRSS is the peak resident memory (VmHWM) of this stack's
// process running the named control-plane binary: the one whose command
// line names the stack's directory (other stacks may run on the machine).
func stackPeakRSS(b *testing.B, binary string) int64 {
	b.Helper()
	dir := stk.ControlPlane().Dir()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) != binary || !strings.Contains(string(cmdline), dir) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	b.Fatalf("no %s process of the stack in %s", binary, dir)
	return 0
}

// freshController restarts the controller process, so that its peak
// memory is this run's, and returns it with its API request count so far;
// the emulator's call log starts empty.
func freshController(b *testing.B) (*ctrlproc.Replica, float64) {
	b.Helper()
	if err := ctrl.Kill(0); err != nil {
		b.Fatal(err)
	}
	if err := ctrl.Restart(context.Background(), 0); err != nil {
		b.Fatal(err)
	}
	r := ctrl.Replica(0)
	reqBefore, err := scrape(r, "rest_client_requests_total")
	if err != nil {
		b.Fatal(err)
	}
	emu().ResetCalls()
	return r, reqBefore
}
