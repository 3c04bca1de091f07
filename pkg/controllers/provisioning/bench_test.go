package provisioning_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
)

// BenchmarkProvisionManyNodePools measures one provisioning pass (read the
// cluster from the cache, snapshot, solve, create the NodeClaims) with
// 5,000 Ready NodePools over the built-in catalog's us-east-1 types and 3
// pending pods. Two shapes: teams, one pool per team (a label, a taint its
// pods tolerate, a cpu limit); distinct, pools that each allow types of
// their own (a least memory per pool, every other pool without one zone),
// so no two compile alike. Setting up the pools is not timed. Run with
//
//	go test ./pkg/controllers/provisioning -run '^$' -bench ManyNodePools -benchtime 1x
func BenchmarkProvisionManyNodePools(b *testing.B) {
	b.Run("teams=5000", func(b *testing.B) { benchManyPools(b, false) })
	b.Run("distinct=5000", func(b *testing.B) { benchManyPools(b, true) })
}

func benchManyPools(b *testing.B, distinct bool) {
	const pools = 5000
	if b.N != 1 {
		b.Fatal("one pass is the measurement: run with -benchtime 1x")
	}
	env := controllerstest.New(b, cp.RESTConfig())
	m, err := provisioning.NewMetrics(env.Metrics)
	if err != nil {
		b.Fatal(err)
	}
	cloud := controllerstest.NewCloud(catalog.Builtin().InstanceTypes("us-east-1", nil, catalog.KubeletSettings{})...)
	p := provisioning.New(env.Manager.GetClient(), cloud, env.Clock, env.Recorder(), m, env.Unavailable, provisioning.Options{})
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Start(p)

	// The pools, 16 writers at a time.
	names := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, pools)
	for range 16 {
		wg.Go(func() {
			for i := range names {
				np := controllerstest.NodePool(fmt.Sprintf("team-%d", i))
				if distinct {
					reqs := &np.Spec.Template.Spec.Requirements
					*reqs = append(*reqs, karpv1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-memory", Operator: corev1.NodeSelectorOpGt, Values: []string{fmt.Sprint(1000 + i)}})
					if i%2 == 1 {
						*reqs = append(*reqs, karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{fmt.Sprintf("us-east-1%c", 'a'+rune(i%5))}})
					}
				} else {
					np.Spec.Template.Labels = map[string]string{"team": fmt.Sprint(i)}
					np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: fmt.Sprint(i), Effect: corev1.TaintEffectNoSchedule}}
					np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(100 + i))}
				}
				if err := env.Client.Create(env.Context(), np); err != nil {
					errs <- err
					continue
				}
				now := time.Now()
				np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
				np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
				if err := env.Client.Status().Update(env.Context(), np); err != nil {
					errs <- err
				}
			}
		})
	}
	start := time.Now()
	for i := range pools {
		names <- i
		if (i+1)%1000 == 0 {
			b.Logf("%d NodePools created (%s)", i+1, time.Since(start).Round(time.Second))
		}
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	env.Eventually("the cache holds every pool Ready", func() (bool, error) {
		var list karpv1.NodePoolList
		if err := env.Manager.GetClient().List(env.Context(), &list); err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			if list.Items[i].IsTrue(karpv1.ConditionTypeReady) {
				ready++
			}
		}
		if ready < pools {
			return false, fmt.Errorf("%d of %d pools Ready in the cache", ready, pools)
		}
		return true, nil
	})

	ns := env.Namespace()
	for i := range 3 {
		pod := pendingPod(ns, fmt.Sprintf("p%d", i), "100m", "128Mi")
		if !distinct {
			pod.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: fmt.Sprint(i * 7), Effect: corev1.TaintEffectNoSchedule}}
		}
		env.Create(pod)
	}
	env.Eventually("the cache holds the pods unschedulable", func() (bool, error) {
		var list corev1.PodList
		if err := env.Manager.GetClient().List(env.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		n := 0
		for i := range list.Items {
			if provisioning.Provisionable(&list.Items[i]) {
				n++
			}
		}
		if n < 3 {
			return false, fmt.Errorf("%d of 3 pods unschedulable in the cache", n)
		}
		return true, nil
	})

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	res, err := p.Provision(env.Context())
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// Team pods each need their team's pool; the distinct shape's pods fit
	// one node.
	want := 3
	if distinct {
		want = 1
	}
	if len(res.Created) != want || len(res.Plan.Unschedulable) != 0 {
		b.Fatalf("%d NodeClaims created, %d pods unschedulable; want %d and 0", len(res.Created), len(res.Plan.Unschedulable), want)
	}
	b.ReportMetric(float64(after.HeapInuse)/1e6, "heap-MB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6, "alloc-MB")
}
