package status_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclass/status"
)

// resolver is an in-memory implementation of our own Resolver and
// Finalizer interfaces: it "finds" one subnet per class, fails while err
// is set, and records Finalize calls.
type resolver struct {
	clock clock.PassiveClock

	mu        sync.Mutex
	err       error
	finalized []string
	resolves  int
}

var (
	_ status.Resolver  = (*resolver)(nil)
	_ status.Finalizer = (*resolver)(nil)
)

func (r *resolver) Resolve(_ context.Context, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolves++
	if r.err != nil {
		return nil, r.err
	}
	out := nc.DeepCopy()
	out.Status.Subnets = []awsv1.Subnet{{ID: "subnet-" + nc.Name, Zone: controllerstest.ZoneA}}
	out.Status.InstanceProfile = "profile-" + nc.Name
	for _, c := range awsv1.ReadyDependents {
		out.SetCondition(c, metav1.ConditionTrue, "Resolved", "", r.clock.Now())
	}
	return out, nil
}

func (r *resolver) Finalize(_ context.Context, nc *awsv1.EC2NodeClass) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finalized = append(r.finalized, nc.Name)
	return nil
}

func (r *resolver) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func (r *resolver) resolveCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolves
}

func (r *resolver) finalizedNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.finalized...)
}

func TestStatusIsResolvedAndDeletionWaitsForNodeClaims(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	res := &resolver{clock: env.Clock, err: errors.New("cloud unreachable")}
	env.Start(status.NewController(env.Manager.GetClient(), res, env.Recorder(), time.Hour))

	class := controllerstest.EC2NodeClass("default")
	env.Create(class)
	env.Eventually("the finalizer", func() (bool, error) {
		err := env.Get(class)
		return len(class.Finalizers) == 1 && class.Finalizers[0] == awsv1.TerminationFinalizer, err
	})
	// While the cloud cannot be asked, the status stays empty.
	controllerstest.Consistently(t, 300*time.Millisecond, "no status while resolution fails", func() (bool, error) {
		err := env.Get(class)
		return len(class.Status.Conditions) == 0, err
	})
	res.setErr(nil)
	env.Eventually("Ready=True with the resolved subnet", func() (bool, error) {
		if err := env.Get(class); err != nil {
			return false, err
		}
		return class.IsTrue(awsv1.ConditionTypeReady) && len(class.Status.Subnets) == 1 &&
			class.Status.Subnets[0].ID == "subnet-default" && class.Status.InstanceProfile == "profile-default", nil
	})

	// NodeClaims come and change by the hundred in a scale-up; each
	// resolution is several cloud API calls, so they must not cause one.
	// Retries queued while the cloud was unreachable may still run after
	// Ready shows: count from when resolutions have stopped for 500 ms.
	last, since := -1, time.Now()
	env.Eventually("resolutions settle after Ready", func() (bool, error) {
		if n := res.resolveCalls(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 500*time.Millisecond, nil
	})
	resolved := res.resolveCalls()
	nc := controllerstest.NodeClaim("user", "team-a")
	env.Create(nc)
	nc.Labels["touched"] = "yes"
	if err := env.Client.Update(env.Context(), nc); err != nil {
		t.Fatal(err)
	}
	controllerstest.Consistently(t, 300*time.Millisecond, "no resolution for NodeClaim changes", func() (bool, error) {
		if n := res.resolveCalls(); n != resolved {
			return false, fmt.Errorf("%d resolutions after the NodeClaim's create and update, want %d", n, resolved)
		}
		return true, nil
	})
	env.Delete(class)
	env.EventuallyEventAbout(class, status.ReasonWaitingOnNodeClaims)
	controllerstest.Consistently(t, 300*time.Millisecond, "the class to wait for its NodeClaim", func() (bool, error) {
		ok, err := env.NotFound(class)
		return !ok, err
	})
	if got := res.finalizedNames(); len(got) != 0 {
		t.Fatalf("finalized %v while a NodeClaim used the class", got)
	}
	env.Delete(nc) // no finalizer: no lifecycle controller runs here
	env.Eventually("the class to be gone", func() (bool, error) { return env.NotFound(class) })
	if got := res.finalizedNames(); len(got) != 1 || got[0] != class.Name {
		t.Fatalf("finalized %v, want [%s]", got, class.Name)
	}
}
