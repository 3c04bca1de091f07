package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
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
		// A fresh controller process, so that its peak memory is this run's.
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
