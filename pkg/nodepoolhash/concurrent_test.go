package nodepoolhash_test

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
)

// TestHashConcurrent: provisioning makes a pass's NodeClaims in parallel,
// each stamped with its pool's hash; every goroutine must get the same
// hash (a hasher shared between calls gave some NodeClaims another one,
// and they were replaced as NodePoolDrifted minutes after their launch).
func TestHashConcurrent(t *testing.T) {
	np := &karpv1.NodePool{}
	np.Spec.Template.Labels = map[string]string{"testing/cluster": "unspecified", "team": "a"}
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Minute}
	np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	want := nodepoolhash.Hash(np)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				h := nodepoolhash.Hash(np)
				mu.Lock()
				got[h]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != 1 || got[want] == 0 {
		t.Fatalf("concurrent hashes of one NodePool: %v, want only %s", got, want)
	}
}
