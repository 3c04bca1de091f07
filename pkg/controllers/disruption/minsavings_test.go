package disruption_test

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
)

// The controller's savings threshold holds a consolidation below it; a
// NodePool annotation that does not parse is reported on the NodePool and
// the controller's value is used; a valid annotation overrides it.
func TestMinSavingsThreshold(t *testing.T) {
	f := setup(t, true, func(np *karpv1.NodePool) {
		np.Annotations = map[string]string{karpv1.AnnotationConsolidationMinSavings: "lots"}
	})
	big, node := f.node("big", "c5.xlarge")
	f.pod("small", node.Name, "100m")
	c := f.controller(disruption.Options{MinSavings: planner.MinSavings{PerCommand: 1000}})

	f.env.Clock.Step(time.Second)
	f.pass(c)
	f.env.Clock.Step(disruption.DefaultValidationPeriod)
	f.pass(c)
	if err := f.env.Get(big); err != nil || big.Annotations[disruption.CommandAnnotationKey] != "" {
		t.Fatalf("consolidated below the $1000/h threshold (err %v)", err)
	}
	ev := f.env.EventuallyEventAbout(node, disruption.ReasonUnconsolidatable)
	if !strings.Contains(ev.Note, string(planner.CodeMinSavings)) || !strings.Contains(ev.Note, "controller's minimum") {
		t.Errorf("Unconsolidatable note %q does not give %s and the controller's minimum", ev.Note, planner.CodeMinSavings)
	}
	warn := f.env.EventuallyEventAbout(f.pool, disruption.ReasonInvalidMinSavings)
	for _, want := range []string{karpv1.AnnotationConsolidationMinSavings, `"lots"`, "controller's value"} {
		if !strings.Contains(warn.Note, want) {
			t.Errorf("NodePool warning %q does not contain %q", warn.Note, want)
		}
	}
	if warn.Type != "Warning" {
		t.Errorf("NodePool event type %s, want Warning", warn.Type)
	}

	// A valid annotation of 0 turns the threshold off for the pool.
	base := f.pool.DeepCopy()
	f.pool.Annotations = map[string]string{karpv1.AnnotationConsolidationMinSavings: "0"}
	if err := f.env.Client.Patch(f.env.Context(), f.pool, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	f.env.Clock.Step(time.Second)
	f.pass(c)
	f.env.Clock.Step(disruption.DefaultValidationPeriod)
	f.pass(c)
	if err := f.env.Get(big); err != nil || big.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatalf("the pool's annotation 0 did not override the controller's threshold (err %v); events: %v", err, f.env.EventsAbout(node))
	}
}
