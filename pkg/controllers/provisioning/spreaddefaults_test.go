package provisioning_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

// TestSchedulerConfigSpreadsADeployment: with SCHEDULER_CONFIG's defaults
// (one per host and one per zone, DoNotSchedule, as the peer's suite
// configures its kube-scheduler), the four one-CPU pods of a Deployment,
// which declare no spread of their own, get four NodeClaims in four zones:
// the selector comes from their ReplicaSet, read from the cache. Without
// the setting the same pods pack onto fewer nodes.
func TestSchedulerConfigSpreadsADeployment(t *testing.T) {
	cfg, err := spreaddefaults.Parse([]byte(`podTopologySpread:
  defaultConstraints:
    - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		defaults []corev1.TopologySpreadConstraint
	}{{"with", cfg.Constraints()}, {"without", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			env := controllerstest.New(t, cp.RESTConfig())
			env.Cloud = controllerstest.NewCloud(fourZones()...)
			m, err := provisioning.NewMetrics(env.Metrics)
			if err != nil {
				t.Fatal(err)
			}
			p := provisioning.New(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), m, env.Unavailable,
				provisioning.Options{SpreadDefaults: tc.defaults})
			env.Create(controllerstest.EC2NodeClass("default"))
			env.Start(p)
			f := &fixture{t: t, env: env, prov: p, m: m, ns: env.Namespace()}
			f.readyPool(controllerstest.NodePool("default"))

			labels := map[string]string{"app": "spread-" + tc.name}
			tmpl := pendingPod(f.ns, "", "1", "1Gi")
			tmpl.Labels = labels
			dep := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](4),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
				},
			}
			env.Create(dep)
			var pods []*corev1.Pod
			env.Eventually("the Deployment's 4 pods", func() (bool, error) {
				var list corev1.PodList
				if err := env.Client.List(env.Context(), &list, client.InNamespace(f.ns), client.MatchingLabels(labels)); err != nil {
					return false, err
				}
				pods = pods[:0]
				for i := range list.Items {
					pods = append(pods, &list.Items[i])
				}
				return len(pods) == 4, nil
			})
			f.waitUnschedulable(pods...)
			// The ReplicaSet the selector comes from, in the cache.
			env.Eventually("the ReplicaSet in the cache", func() (bool, error) {
				var rss appsv1.ReplicaSetList
				err := env.Manager.GetClient().List(env.Context(), &rss, client.InNamespace(f.ns))
				return len(rss.Items) == 1, err
			})

			res := f.provision()
			if len(res.Plan.Unschedulable) != 0 {
				t.Fatalf("unschedulable: %+v", res.Plan.Unschedulable)
			}
			claims := f.nodeClaims()
			if tc.defaults == nil {
				if len(claims) >= 4 {
					t.Errorf("without defaults: %d NodeClaims for 4 one-CPU pods, want them packed", len(claims))
				}
				return
			}
			if len(claims) != 4 {
				t.Fatalf("with defaults: %d NodeClaims, want 4 (one per pod)", len(claims))
			}
			zones := map[string]bool{}
			for i := range claims {
				r := requirement(&claims[i], corev1.LabelTopologyZone)
				if r == nil || len(r.Values) != 1 {
					t.Fatalf("NodeClaim %s: zone requirement %+v, want one zone", claims[i].Name, r)
				}
				zones[r.Values[0]] = true
			}
			if len(zones) != 4 {
				t.Errorf("with defaults: NodeClaims in zones %v, want 4 different zones", zones)
			}
			// The pods in the cluster were not changed.
			for _, pod := range pods {
				got := &corev1.Pod{}
				if err := env.Client.Get(env.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
					t.Fatal(err)
				}
				if len(got.Spec.TopologySpreadConstraints) != 0 {
					t.Errorf("pod %s now has constraints %+v", pod.Name, got.Spec.TopologySpreadConstraints)
				}
			}
		})
	}
}

// fourZones is the test cloud's catalog offered in four zones.
func fourZones() []*cloudprovider.InstanceType {
	its := controllerstest.InstanceTypes()
	for _, it := range its {
		var more cloudprovider.Offerings
		for i, zone := range []string{"test-zone-c", "test-zone-d"} {
			for _, o := range it.Offerings {
				if o.Zone == controllerstest.ZoneA {
					o.Zone = zone
					o.Price *= 1.02 + 0.01*float64(i)
					more = append(more, o)
				}
			}
		}
		it.Offerings = append(it.Offerings, more...)
	}
	return its
}
