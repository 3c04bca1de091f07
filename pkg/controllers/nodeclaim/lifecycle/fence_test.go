package lifecycle_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
)

// TestImpostorNodeClaims: a NodeClaim whose status copies another claim's
// providerID, or names another claim's node, is never linked to that node:
// it gets a Warning event saying why, its status is cleaned (and, for a
// copied providerID, it is deleted), and the rightful claim keeps its node
// and instance.
func TestImpostorNodeClaims(t *testing.T) {
	garbage := "fake:///" + controllerstest.ZoneA + "/i-../../../\x1b]0;pwned\x07x"
	tests := []struct {
		name string
		// status returns the impostor's providerID and nodeName from the
		// rightful claim's.
		status  func(providerID, nodeName string) (string, string)
		reason  string
		deleted bool
	}{
		{"copied providerID", func(p, n string) (string, string) { return p, n }, lifecycle.ReasonProviderIDInUse, true},
		{"copied providerID without nodeName", func(p, _ string) (string, string) { return p, "" }, lifecycle.ReasonProviderIDInUse, true},
		{"copied nodeName", func(_, n string) (string, string) { return garbage, n }, lifecycle.ReasonNodeNameMismatch, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := controllerstest.New(t, cp.RESTConfig())
			lc := lifecycle.NewController(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{})
			term := termination.NewController(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), env.Metrics)
			env.Start(lc, term)
			env.StartKubelet(controllerstest.KubeletOptions{})
			pool := controllerstest.NodePool("team-a")
			env.Create(pool)

			owner := controllerstest.NodeClaim("owner", pool.Name)
			env.Create(owner)
			owner = waitCondition(t, env, owner.Name, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)
			nodeName, providerID := owner.Status.NodeName, owner.Status.ProviderID

			// The impostor's own launch is held until its status is written,
			// as when status is written in the moment after creation.
			held := make([]error, 20)
			for i := range held {
				held[i] = &cloudprovider.CreateError{Reason: "HeldByTest", Err: errors.New("held by the test")}
			}
			env.Cloud.FailNext("Create", held...)
			imp := controllerstest.NodeClaim("impostor", pool.Name)
			env.Create(imp)
			pid, node := tt.status(providerID, nodeName)
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur := get(t, env, imp.Name)
				cur.Status.ProviderID, cur.Status.NodeName = pid, node
				cur.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, lifecycle.ReasonLaunched, "", env.Clock.Now())
				return env.Client.Status().Update(env.Context(), cur)
			})
			if err != nil {
				t.Fatal(err)
			}

			ev := env.EventuallyEventAbout(imp, tt.reason)
			if ev.Type != corev1.EventTypeWarning {
				t.Errorf("event type %s", ev.Type)
			}
			if strings.ContainsAny(ev.Note, "\x1b\x07") {
				t.Errorf("event note not escaped: %q", ev.Note)
			}
			if !strings.Contains(ev.Note, nodeName) && !strings.Contains(ev.Note, owner.Name) {
				t.Errorf("event note %q names neither the rightful claim nor its node", ev.Note)
			}
			if tt.deleted {
				env.Eventually("the impostor to be deleted", func() (bool, error) {
					return env.NotFound(imp)
				})
			} else {
				env.Eventually("the impostor's nodeName cleared", func() (bool, error) {
					got := get(t, env, imp.Name)
					if got.Status.NodeName != "" {
						return false, fmt.Errorf("status.nodeName %q", got.Status.NodeName)
					}
					return true, nil
				})
			}

			// The rightful claim keeps its node and instance; the node
			// names only it as owner.
			got := get(t, env, owner.Name)
			if got.Status.NodeName != nodeName || got.Status.ProviderID != providerID || !got.IsTrue(karpv1.ConditionTypeRegistered) {
				t.Errorf("rightful claim: nodeName %q providerID %q registered %v; want %q %q true",
					got.Status.NodeName, got.Status.ProviderID, got.IsTrue(karpv1.ConditionTypeRegistered), nodeName, providerID)
			}
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
			if err := env.Get(n); err != nil {
				t.Fatalf("the rightful claim's node: %v", err)
			}
			if !n.DeletionTimestamp.IsZero() {
				t.Error("the rightful claim's node is being deleted")
			}
			if refs := n.OwnerReferences; len(refs) != 1 || refs[0].UID != owner.UID {
				t.Errorf("node owner references %+v, want the rightful claim's only", refs)
			}
			live := false
			for _, inst := range env.Cloud.Instances() {
				live = live || inst.Status.ProviderID == providerID
			}
			if !live {
				t.Error("the rightful claim's instance was terminated")
			}
		})
	}
}
