package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// crashWorkload is the 200-pod scale-up of the crash test: two Deployments
// of different shapes and architectures.
func crashWorkload(s *scenario) {
	s.deployment("web", 120, "500m", "1Gi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	})
	s.deployment("api", 80, "1", "2Gi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
	})
}

// TestCrashSafety kills the controller with SIGKILL at 20 seeded random
// moments during a 200-pod scale-up, restarting it each time. Afterwards
// every instance has a NodeClaim and every NodeClaim an instance, there are
// at most one more node than an uninterrupted run of the same scale-up
// makes, and every pod runs.
func TestCrashSafety(t *testing.T) {
	var baseline int
	t.Run("uninterrupted", func(t *testing.T) {
		s := newScenario(t)
		crashWorkload(s)
		s.waitRunning(200, 3*time.Minute)
		baseline = len(managedNodes(t))
		t.Logf("an uninterrupted run makes %d nodes", baseline)
	})
	if baseline == 0 {
		t.Fatal("no baseline")
	}
	t.Run("killed 20 times", func(t *testing.T) {
		s := newScenario(t)
		rng := rand.New(rand.NewPCG(20, 26))
		crashWorkload(s)
		for i := range 20 {
			// A random moment in the next 1.5 s: the kill lands anywhere
			// in a batch, a solve, a launch or a registration.
			timer := time.NewTimer(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
			<-timer.C
			if err := ctrl.Kill(0); err != nil {
				t.Fatal(err)
			}
			if err := ctrl.Restart(s.ctx, 0); err != nil {
				t.Fatalf("restart %d: %v", i+1, err)
			}
		}
		s.waitRunning(200, 4*time.Minute)
		eventually(t, 3*time.Minute, "instances and NodeClaims to match one to one", func() (bool, error) {
			err := consistent(t)
			return err == nil, err
		})
		nodes := len(managedNodes(t))
		t.Logf("after 20 kills: %d nodes (uninterrupted: %d)", nodes, baseline)
		if nodes > baseline+1 {
			t.Errorf("%d nodes after the crashes, more than the uninterrupted run's %d + 1", nodes, baseline)
		}
	})
}

// leaderStatus scrapes a replica's metrics for client-go's
// leader_election_master_status gauge: 1 when it leads.
func leaderStatus(r *ctrlproc.Replica) (bool, error) {
	v, err := scrape(r, "leader_election_master_status")
	return v == 1, err
}

// scrape returns the sum of a metric's samples from a replica.
func scrape(r *ctrlproc.Replica, name string) (float64, error) {
	resp, err := http.Get(r.MetricsURL())
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// TestLeaderElection runs two controller replicas: only the leader
// provisions; when it is killed, the other takes over within the lease
// duration and finishes the scale-up.
func TestLeaderElection(t *testing.T) {
	s := newScenario(t)
	if err := ctrl.Reconfigure(s.ctx, func(c *ctrlproc.Component) { c.Replicas = 2 }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := ctrl.Reconfigure(ctx, func(c *ctrlproc.Component) { c.Replicas = 1 }); err != nil {
			t.Errorf("back to one replica: %v", err)
		}
	})
	var leader, follower *ctrlproc.Replica
	eventually(t, time.Minute, "one leader", func() (bool, error) {
		a, errA := leaderStatus(ctrl.Replica(0))
		b, errB := leaderStatus(ctrl.Replica(1))
		if errA != nil || errB != nil {
			return false, fmt.Errorf("%v %v", errA, errB)
		}
		switch {
		case a && !b:
			leader, follower = ctrl.Replica(0), ctrl.Replica(1)
		case b && !a:
			leader, follower = ctrl.Replica(1), ctrl.Replica(0)
		default:
			return false, fmt.Errorf("leader status %v %v", a, b)
		}
		return true, nil
	})

	s.deployment("web", 60, "500m", "1Gi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	})
	eventually(t, time.Minute, "the leader to launch", func() (bool, error) {
		return len(nodeClaims(t)) > 0, nil
	})
	if n, err := scrape(follower, "dovetail_provisioning_batches_total"); err != nil || n != 0 {
		t.Errorf("the follower ran %v provisioning passes (%v), want none", n, err)
	}
	if n, err := scrape(leader, "dovetail_provisioning_batches_total"); err != nil || n == 0 {
		t.Errorf("the leader ran %v provisioning passes (%v)", n, err)
	}

	// Kill the leader mid scale-up.
	var before coordinationv1.Lease
	leaseKey := client.ObjectKey{Namespace: operator.DefaultLeaseNamespace, Name: operator.DefaultLeaseName}
	if err := kube.Get(s.ctx, leaseKey, &before); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := ctrl.Kill(leader.Index); err != nil {
		t.Fatal(err)
	}
	lease := ctrlproc.DefaultLeaseDuration
	eventually(t, 2*lease+5*time.Second, "the follower to lead", func() (bool, error) {
		return leaderStatus(follower)
	})
	seen := time.Since(killed)
	// The takeover is when the follower acquired the lease (the Lease's
	// acquireTime), not when a scrape of its metrics first says so: the
	// poll and the scrape add seconds on a loaded machine.
	var after coordinationv1.Lease
	if err := kube.Get(s.ctx, leaseKey, &after); err != nil {
		t.Fatal(err)
	}
	if after.Spec.AcquireTime == nil || after.Spec.HolderIdentity == nil || before.Spec.HolderIdentity != nil && *after.Spec.HolderIdentity == *before.Spec.HolderIdentity {
		t.Fatalf("lease after the kill %+v, before %+v: no new holder", after.Spec, before.Spec)
	}
	takeover := after.Spec.AcquireTime.Sub(killed)
	t.Logf("takeover %s after the kill, seen %s after (lease %s, retry %s)", takeover.Round(10*time.Millisecond), seen.Round(10*time.Millisecond), lease, ctrlproc.DefaultLeaseRetryPeriod)
	// The follower may take the lease LeaseDuration after it last saw it
	// renewed (at most a RetryPeriod before the kill) and tries every
	// RetryPeriod with up to 120% jitter. What must not happen is a
	// follower that waits out a second lease, or more.
	if limit := 2 * lease; takeover > limit {
		t.Errorf("takeover took %s, more than twice the lease duration (%s)", takeover, limit)
	}
	s.waitRunning(60, 3*time.Minute)
	// A launch the killed leader had in flight may have left an instance
	// whose NodeClaim never learned of it; garbage collection removes it.
	eventually(t, 3*time.Minute, "instances and NodeClaims to match one to one", func() (bool, error) {
		err := consistent(t)
		return err == nil, err
	})
}
