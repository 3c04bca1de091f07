package termination_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
)

// ExampleDeadline shows when a node must be gone: its NodeClaim's deletion
// time plus spec.terminationGracePeriod.
func ExampleDeadline() {
	deleted := metav1.NewTime(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}}
	fmt.Println(termination.Deadline(nc))
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 90 * time.Minute}
	fmt.Println(termination.Deadline(nc).UTC())
	// Output:
	// <nil>
	// 2025-03-01 10:30:00 +0000 UTC
}
