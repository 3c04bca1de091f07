package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/cli/explain"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	pkgexplain "github.com/dovetail-sh/dovetail/pkg/explain"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

const ns = "shop"

func cpu(v string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
}

func pendingPod(name, pool, cpuReq string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{karpv1.NodePoolLabelKey: pool},
			Containers: []corev1.Container{{Name: "c", Image: "app", Resources: corev1.ResourceRequirements{Requests: cpu(cpuReq)}}}}}
}

// seed builds one pool per reason: "small" (at most 4 vCPU types), "tainted",
// "zonal" (us-east-1a only) and "limited" (4 CPU, used by its node), with
// pods that each select one pool; a bound pod with a Nominated event and one
// without; a launched NodeClaim with its recorded offering.
func seed(t *testing.T) client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cp.RESTConfig(), client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	class := controllerstest.EC2NodeClass("default")
	create(class)
	class.Status.Subnets = []awsv1.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}, {ID: "subnet-b", Zone: "us-east-1b"}, {ID: "subnet-c", Zone: "us-east-1c"}}
	if err := c.Status().Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	small := controllerstest.NodePool("small")
	small.Spec.Template.Spec.Requirements = append(small.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"5"}})
	create(small)
	tainted := controllerstest.NodePool("tainted")
	tainted.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	create(tainted)
	zonal := controllerstest.NodePool("zonal")
	zonal.Spec.Template.Spec.Requirements = append(zonal.Spec.Template.Spec.Requirements, controllerstest.Requirement(corev1.LabelTopologyZone, "us-east-1a"))
	create(zonal)
	limited := controllerstest.NodePool("limited")
	limited.Spec.Limits = karpv1.Limits(cpu("4"))
	// Spot is allowed by the pool; its NodeClaim below asks for on-demand.
	limited.Spec.Template.Spec.Requirements[1].Values = []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}
	create(limited)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "limited-node", Labels: map[string]string{
		karpv1.NodePoolLabelKey: "limited", corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelTopologyZone: "us-east-1a",
		corev1.LabelTopologyRegion: "us-east-1", karpv1.CapacityTypeLabelKey: "on-demand", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}}}
	create(node)
	node.Spec.Taints = nil
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"), corev1.ResourcePods: resource.MustParse("58")}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	nc := controllerstest.NodeClaim("limited-abc12", "limited",
		controllerstest.Requirement(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge", "c5.xlarge"),
		controllerstest.Requirement(corev1.LabelTopologyZone, "us-east-1a"))
	nc.Spec.Resources.Requests = cpu("3")
	nc.Annotations = map[string]string{karpv1.AnnotationOffering: "m5.xlarge/us-east-1a/on-demand", karpv1.AnnotationPricePerHour: "0.192"}
	create(nc)
	nc.Status.NodeName = node.Name
	nc.Status.ProviderID = "aws:///us-east-1a/i-0abc"
	if err := c.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}

	create(pendingPod("big", "small", "7500m"))
	create(pendingPod("untolerated", "tainted", "1"))
	create(pendingPod("over-limit", "limited", "3800m")) // more than the 3720m free on its node
	zoned := pendingPod("zoned", "zonal", "1")
	zoned.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}
	create(zoned)
	create(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data-0"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}},
		ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data-0"},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1c"}}}}}}},
	}})
	create(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-0", Namespace: ns}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-data-0",
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}})

	planned := controllerstest.Pod(ns, "planned", node.Name)
	planned.Spec.Containers[0].Resources.Requests = cpu("100m")
	create(planned)
	unplanned := controllerstest.Pod(ns, "unplanned", node.Name)
	unplanned.Spec.Containers[0].Resources.Requests = cpu("100m")
	create(unplanned)
	create(&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "planned.nominated", Namespace: ns},
		EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "dovetail", ReportingInstance: "dovetail-0", Action: "Provisioning",
		Reason: "Nominated", Type: corev1.EventTypeNormal, Note: "Pod should schedule on NodeClaim limited-abc12, which is being launched",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "planned", UID: planned.UID}})
	return c
}

func run(t *testing.T, kind, ref string) (*bytes.Buffer, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := explain.NewCmd(nil)
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{kind, ref, "--kubeconfig", cp.KubeconfigPath(), "-o", "json"})
	err := cmd.ExecuteContext(context.Background())
	return &stdout, err
}

func explainPod(t *testing.T, ref string) *pkgexplain.Pod {
	t.Helper()
	out, err := run(t, "pod", ref)
	if err != nil {
		t.Fatalf("explain pod %s: %v", ref, err)
	}
	var p pkgexplain.Pod
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("explain pod %s -o json: %v\n%s", ref, err, out)
	}
	return &p
}

func pool(t *testing.T, p *pkgexplain.Pod, name string) pkgexplain.Pool {
	t.Helper()
	for _, pl := range p.NodePools {
		if pl.Name == name {
			return pl
		}
	}
	t.Fatalf("%s: no nodepool %s in %+v", p.Pod, name, p.NodePools)
	return pkgexplain.Pool{}
}

func TestExplainOnTheRealControlPlane(t *testing.T) {
	seed(t)

	t.Run("pending for cpu", func(t *testing.T) {
		p := explainPod(t, ns+"/big")
		pl := pool(t, p, "small")
		if p.State != "Pending" || p.Verdict.Schedulable || p.Verdict.Code != "ResourcesExceedAllTypes" {
			t.Errorf("verdict %+v; want ResourcesExceedAllTypes", p.Verdict)
		}
		if pl.Code != "ResourcesExceedAllTypes" || !strings.Contains(pl.Reason, "too small for cpu (needs 7.5 with daemonsets, largest allowed 3.") || pl.Fitting != 0 {
			t.Errorf("pool small = %+v; want too small for cpu, needs 7.5, largest allowed below 4", pl)
		}
		// Every other pool is ruled out by the pod's node selector.
		if other := pool(t, p, "zonal"); other.Code != pkgexplain.CodeRequirements || !strings.Contains(other.Reason, karpv1.NodePoolLabelKey) {
			t.Errorf("pool zonal = %+v; want its nodepool label to rule it out", other)
		}
	})
	t.Run("pending for a taint", func(t *testing.T) {
		p := explainPod(t, ns+"/untolerated")
		pl := pool(t, p, "tainted")
		if pl.Code != pkgexplain.CodeTaintNotTolerated || !strings.Contains(pl.Reason, "dedicated=gpu:NoSchedule") || !strings.Contains(pl.Fix, "toleration") {
			t.Errorf("pool tainted = %+v", pl)
		}
		if p.Verdict.Schedulable {
			t.Errorf("verdict %+v; want unschedulable", p.Verdict)
		}
	})
	t.Run("pending for a zone volume", func(t *testing.T) {
		p := explainPod(t, ns+"/zoned")
		pl := pool(t, p, "zonal")
		if pl.Code != "VolumeZoneConflict" || !strings.Contains(pl.Reason, "no offering in the volumes' zones [us-east-1c]") || !strings.Contains(pl.Fix, "data-0") {
			t.Errorf("pool zonal = %+v; want the volume's zone us-east-1c named", pl)
		}
		if p.Verdict.Code != "VolumeZoneConflict" {
			t.Errorf("verdict %+v; want the engine's VolumeZoneConflict", p.Verdict)
		}
	})
	t.Run("pending for limits", func(t *testing.T) {
		p := explainPod(t, ns+"/over-limit")
		pl := pool(t, p, "limited")
		if pl.Code != "NodePoolLimitReached" || !strings.Contains(pl.Reason, "limit cpu 4 reached: 4 in use") || pl.Fitting == 0 {
			t.Errorf("pool limited = %+v; want the cpu limit of 4 with 4 in use", pl)
		}
		if p.Verdict.Code != "NodePoolLimitReached" {
			t.Errorf("verdict %+v; want the engine's NodePoolLimitReached", p.Verdict)
		}
		// Its node has 3920m allocatable, 200m taken by two bound pods.
		if p.Nodes.Total != 1 || p.Nodes.Fit != 0 || len(p.Nodes.Rejected) != 1 || p.Nodes.Rejected[0].Reason != "too little free cpu" {
			t.Errorf("existing nodes %+v; want the one node too short of cpu", p.Nodes)
		}
	})
	t.Run("bound as planned", func(t *testing.T) {
		p := explainPod(t, ns+"/planned")
		if p.State != "Bound" || p.NodeClaim != "limited-abc12" || p.PlannedOnto != "limited-abc12" || p.PlacedBy != "dovetail's plan" {
			t.Errorf("planned = %+v", p)
		}
		u := explainPod(t, ns+"/unplanned")
		if u.PlannedOnto != "" || u.PlacedBy != "kube-scheduler" || u.NodeClaim != "limited-abc12" {
			t.Errorf("unplanned = %+v", u)
		}
	})
	t.Run("nodeclaim", func(t *testing.T) {
		out, err := run(t, "nodeclaim", "limited-abc12")
		if err != nil {
			t.Fatal(err)
		}
		var n pkgexplain.NodeClaim
		if err := json.Unmarshal(out.Bytes(), &n); err != nil {
			t.Fatal(err)
		}
		if o := n.Offering; o == nil || !o.Recorded || o.InstanceType != "m5.xlarge" || o.PricePerHour != 0.192 {
			t.Fatalf("offering %+v; want the recorded m5.xlarge at 0.192", n.Offering)
		}
		reasons := map[string]int{}
		for _, c := range n.CheaperReasons {
			reasons[c.Reason] = c.Count
		}
		var small, zone, spot bool
		for r := range reasons {
			small = small || r == "too small for cpu (needs 3)"
			zone = zone || strings.HasPrefix(r, "zone us-east-1b not allowed")
			spot = spot || r == "capacity type spot not allowed"
		}
		if !small || !zone || !spot {
			t.Errorf("cheaper reasons %v; want too small for cpu, zone us-east-1b and spot among them", reasons)
		}
		for _, a := range n.Cheaper {
			if a.PricePerHour >= 0.192 {
				t.Errorf("cheaper alternative %+v is not cheaper", a)
			}
			if a.InstanceType == "m5.large" && a.Zone == "us-east-1a" && a.CapacityType == "on-demand" && !strings.HasPrefix(a.Reason, "too small for cpu") {
				t.Errorf("m5.large on-demand in us-east-1a: %q; want too small (2 vCPU for 3)", a.Reason)
			}
		}
	})
	t.Run("text", func(t *testing.T) {
		for _, args := range [][3]string{{"pod", ns + "/big", "too small for cpu"}, {"pod", ns + "/zoned", "VolumeZoneConflict"},
			{"pod", ns + "/over-limit", "NodePoolLimitReached"}, {"pod", ns + "/planned", "placed by:    dovetail's plan"},
			{"nodeclaim", "limited-abc12", "capacity type spot not allowed"}} {
			var stdout bytes.Buffer
			cmd := explain.NewCmd(nil)
			cmd.SetOut(&stdout)
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs([]string{args[0], args[1], "--kubeconfig", cp.KubeconfigPath()})
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), args[2]) {
				t.Errorf("explain %s %s: the text lacks %q:\n%s", args[0], args[1], args[2], stdout.String())
			}
			t.Logf("$ dovetail explain %s %s\n%s", args[0], args[1], stdout.String())
		}
	})
	t.Run("bad references", func(t *testing.T) {
		for _, args := range [][2]string{{"pod", ns + "/missing"}, {"pod", "no-namespace"}, {"nodeclaim", "missing"}} {
			_, err := run(t, args[0], args[1])
			if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), strings.TrimPrefix(args[1], ns+"/")) {
				t.Errorf("explain %s %s: %v (exit %d); want exit 2 naming it", args[0], args[1], err, cmdutil.ExitCode(err))
			}
		}
	})
}
