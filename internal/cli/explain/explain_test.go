package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/cli/explain"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	pkgexplain "github.com/dovetail-sh/dovetail/pkg/explain"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
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

	// "scarce" has one type in two zones; the pod that selects it wants
	// us-east-1a, where the controller holds the offering unavailable
	// (published as pkg/controllers/offerings does).
	scarce := controllerstest.NodePool("scarce")
	scarce.Spec.Template.Spec.Requirements = append(scarce.Spec.Template.Spec.Requirements,
		controllerstest.Requirement(corev1.LabelInstanceTypeStable, "m5.large"), controllerstest.Requirement(corev1.LabelTopologyZone, "us-east-1a", "us-east-1b"))
	create(scarce)
	held, err := unavailable.Encode([]unavailable.Entry{{Offering: cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}, Until: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: unavailable.PublishedConfigMap, Namespace: "kube-system"}, Data: map[string]string{unavailable.PublishedKey: string(held)}})
	starved := pendingPod("starved", "scarce", "1")
	starved.Spec.NodeSelector[corev1.LabelTopologyZone] = "us-east-1a"
	create(starved)

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

	t.Run("node, read live", func(t *testing.T) {
		r, err := explainNode(t, "limited-node", "--kubeconfig", cp.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("limited-node: %+v", r)
		if r.NodePool != "limited" || r.Decision == "" || (r.Decision == "kept") != (r.Code != "") {
			t.Errorf("limited-node: %+v", r)
		}
		if _, err := explainNode(t, "no-such-node", "--kubeconfig", cp.KubeconfigPath()); cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "no-such-node") {
			t.Errorf("unknown node: %v", err)
		}
	})

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
	t.Run("pending for an offering held unavailable", func(t *testing.T) {
		p := explainPod(t, ns+"/starved")
		pl := pool(t, p, "scarce")
		if pl.Code != "NoAvailableOffering" || !strings.Contains(pl.Reason, "1 offerings held unavailable (insufficient capacity)") {
			t.Errorf("pool scarce = %+v; want its one offering held unavailable", pl)
		}
		// The engine drops the held zone from the pool before it looks at
		// the pod: its reason names the zones left.
		if p.Verdict.Schedulable || !strings.Contains(p.Verdict.Message, "the pool offers zones [us-east-1b]") {
			t.Errorf("verdict %+v; want unschedulable, the held zone gone from the pool", p.Verdict)
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
	// Issue 34 item 3: a NodePool whose EC2NodeClass is missing is reported
	// and left out; every question about the rest is still answered.
	t.Run("a broken NodePool is reported, the rest answered", func(t *testing.T) {
		c, err := client.New(cp.RESTConfig(), client.Options{Scheme: controllerstest.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		broken := controllerstest.NodePool("broken")
		broken.Spec.Template.Spec.NodeClassRef = controllerstest.NodeClassRef("missing")
		if err := c.Create(context.Background(), broken); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Delete(context.Background(), broken) }()
		for _, args := range [][2]string{{"pod", ns + "/planned"}, {"nodeclaim", "limited-abc12"}} {
			var stdout, stderr bytes.Buffer
			cmd := explain.NewCmd(nil)
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SetArgs([]string{args[0], args[1], "--kubeconfig", cp.KubeconfigPath(), "-o", "json"})
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("explain %s %s with a broken NodePool: %v (exit %d)", args[0], args[1], err, cmdutil.ExitCode(err))
			}
			if !strings.Contains(stderr.String(), "warning: NodePool broken left out: its EC2NodeClass missing does not exist") || stdout.Len() == 0 {
				t.Errorf("explain %s %s: stderr %q, %d bytes of output; want the broken pool reported and an answer", args[0], args[1], stderr.String(), stdout.Len())
			}
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

// TestExplainSimulateInput: -f reads simulate input instead of a cluster
// (the Deployment expanded into pods as simulate does).
func TestExplainSimulateInput(t *testing.T) {
	var stdout bytes.Buffer
	cmd := explain.NewCmd(nil)
	cmd.SetOut(&stdout)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"pod", "default/giant", "-f", "../../../pkg/simulate/testdata/basic", "-o", "json"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var p pkgexplain.Pod
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.State != "Pending" || p.Verdict.Code != "ResourcesExceedAllTypes" {
		t.Errorf("giant: %+v", p.Verdict)
	}
	if pl := pool(t, &p, "team-b"); pl.Code != pkgexplain.CodeTaintNotTolerated {
		t.Errorf("team-b = %+v; want its taint", pl)
	}
	if pl := pool(t, &p, "multi-default"); pl.Code != "ResourcesExceedAllTypes" || !strings.Contains(pl.Reason, "too small for cpu (needs 4000.1 with daemonsets, largest allowed") {
		t.Errorf("multi-default = %+v", pl)
	}
	cmd = explain.NewCmd(nil)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"pod", "default/web-0", "-f", "no-such-dir"})
	if err := cmd.ExecuteContext(context.Background()); cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("a missing -f: %v", err)
	}
}

func explainNode(t *testing.T, args ...string) (*pkgexplain.NodeResult, error) {
	t.Helper()
	var stdout bytes.Buffer
	cmd := explain.NewCmd(nil)
	cmd.SetOut(&stdout)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(append([]string{"node"}, append(args, "-o", "json")...))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		return nil, err
	}
	var r pkgexplain.NodeResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("explain node -o json: %v\n%s", err, stdout.String())
	}
	return &r, nil
}

// TestExplainNodeSimulateInput: explain node on the disruption example
// cluster gives the planner's decision and reason code per node, and what
// removing it would save.
func TestExplainNodeSimulateInput(t *testing.T) {
	file := "../../../pkg/simulate/testdata/disruption/cluster.yaml"
	at := "2026-12-01T10:00:00Z"
	want := map[string][2]string{ // node: decision, code
		"shop-a":  {"kept", "PDBBlocked"},
		"batch-a": {"kept", "PodDoNotDisrupt"},
		"gpu-a":   {"kept", "Unmanaged"},
		"empty-a": {"Empty", ""},
		"old-a":   {"Drifted", ""},
	}
	for node, w := range want {
		r, err := explainNode(t, node, "-f", file, "--now", at)
		if err != nil {
			t.Fatalf("%s: %v", node, err)
		}
		if r.Decision != w[0] || r.Code != w[1] {
			t.Errorf("%s: decision %q code %q (%s), want %q %q", node, r.Decision, r.Code, r.Reason, w[0], w[1])
		}
	}
	// Held by its PDB, but its pods would fit elsewhere: removing it would
	// save what it costs.
	r, err := explainNode(t, "shop-a", "-f", file, "--now", at)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Removable || r.SavingsPerHour <= 0 || r.SavingsPerHour > r.PricePerHour+1e-9 || !strings.Contains(r.Reason, "shop/checkout") {
		t.Errorf("shop-a: %+v", r)
	}
	if _, err := explainNode(t, "nope", "-f", file, "--now", at); cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := explainNode(t, "shop-a", "-f", file, "--now", "yesterday"); cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "--now") {
		t.Errorf("bad --now: %v", err)
	}
}

// TestExplainNodeReasonsLive: on the real API server, one node per
// planner reason (each node with its NodeClaim, labels and pods as a
// cluster has them), and explain node reads the cluster and names each
// reason.
func TestExplainNodeReasonsLive(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(cp.RESTConfig(), client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "keep"
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, &awsv1.EC2NodeClass{}); err != nil {
		class := controllerstest.EC2NodeClass("default")
		create(class)
	}
	young := controllerstest.NodePool("keep-young")
	young.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1h")
	create(young)
	pool := controllerstest.NodePool("keep")
	pool.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("0s")
	create(pool)
	started := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	node := func(name, poolName string, mutate func(*corev1.Node)) {
		t.Helper()
		labels := map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelTopologyZone: "us-east-1a",
			corev1.LabelTopologyRegion: "us-east-1", karpv1.CapacityTypeLabelKey: "on-demand", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}
		if poolName != "" {
			labels[karpv1.NodePoolLabelKey] = poolName
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if mutate != nil {
			mutate(n)
		}
		create(n)
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"), corev1.ResourcePods: resource.MustParse("58")}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		if poolName == "" {
			return
		}
		nc := controllerstest.NodeClaim(name+"-claim", poolName, controllerstest.Requirement(corev1.LabelInstanceTypeStable, "m5.xlarge"))
		create(nc)
		nc.Status.NodeName, nc.Status.ProviderID = name, "aws:///us-east-1a/i-"+name
		nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "", started.Time)
		if err := c.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, nodeName string, labels, annotations map[string]string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + name, UID: k8stypes.UID("uid-" + name), Controller: ptrTrue()}}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "app", Resources: corev1.ResourceRequirements{Requests: cpu("500m")}}}}}
		create(p)
		p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &started
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	node("keep-dnd-pod", "keep", nil)
	pod("held", "keep-dnd-pod", nil, map[string]string{"karpenter.sh/do-not-disrupt": "true"})
	node("keep-dnd-node", "keep", func(n *corev1.Node) { n.Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"} })
	pod("plain-1", "keep-dnd-node", nil, nil)
	node("keep-pdb", "keep", nil)
	pod("cart", "keep-pdb", map[string]string{"app": "cart"}, nil)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntOrString(1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}}}
	create(pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, ObservedGeneration: pdb.Generation}
	if err := c.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	node("keep-young-node", "keep-young", nil)
	pod("fresh", "keep-young-node", nil, nil)
	// Its last pod event was ten minutes ago, as the pod-events controller
	// records it.
	yc := &karpv1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Name: "keep-young-node-claim"}, yc); err != nil {
		t.Fatal(err)
	}
	yc.Status.LastPodEventTime = metav1.NewTime(time.Now().Add(-10 * time.Minute))
	if err := c.Status().Update(ctx, yc); err != nil {
		t.Fatal(err)
	}
	node("keep-unmanaged", "", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "legacy", Effect: corev1.TaintEffectNoSchedule}}
	})

	want := map[string]string{
		"keep-dnd-pod": "PodDoNotDisrupt", "keep-dnd-node": "NodeDoNotDisrupt", "keep-pdb": "PDBBlocked",
		"keep-young-node": "ConsolidateAfter", "keep-unmanaged": "Unmanaged",
	}
	for name, code := range want {
		r, err := explainNode(t, name, "--kubeconfig", cp.KubeconfigPath())
		if err != nil {
			t.Fatalf("explain node %s: %v", name, err)
		}
		if r.Decision != "kept" || r.Code != code {
			t.Errorf("%s: decision %q code %q (%s), want kept %s", name, r.Decision, r.Code, r.Reason, code)
		}
	}
	// The do-not-disrupt pod is named, and what removing its node would save.
	r, err := explainNode(t, "keep-dnd-pod", "--kubeconfig", cp.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Reason, ns+"/held") || !r.Removable || r.PricePerHour <= 0 {
		t.Errorf("keep-dnd-pod: %+v", r)
	}
}

func ptrTrue() *bool { v := true; return &v }

func ptrIntOrString(v int) *intstr.IntOrString { x := intstr.FromInt32(int32(v)); return &x }

// TestExplainNodeRepair: a node with a fatal GPU fault (an AWS repair
// policy's condition, tolerated 10 minutes) and a do-not-disrupt pod is
// reported by explain node: within its toleration, when it will be
// repaired; past it, that node repair is off, or, with --node-repair, the
// command that replaces it (do-not-disrupt does not hold repair).
func TestExplainNodeRepair(t *testing.T) {
	raw, err := os.ReadFile("../../../pkg/simulate/testdata/disruption/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	at := strings.Index(s, "name: batch-a")
	healthy := `conditions: [{type: Ready, status: "True"}]`
	i := strings.Index(s[at:], healthy)
	if at < 0 || i < 0 {
		t.Fatal("cluster.yaml changed: node batch-a and its conditions not found")
	}
	sick := `conditions: [{type: Ready, status: "True"}, {type: AcceleratedHardwareReady, status: "False", reason: NvidiaXID79Error, lastTransitionTime: "2026-12-01T09:00:00Z"}]`
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(file, []byte(s[:at+i]+sick+s[at+i+len(healthy):]), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now, flag, decision, code, says string
	}{
		{"2026-12-01T09:05:00Z", "--node-repair", "kept", "UnhealthyWithinToleration", "2026-12-01T09:10:00Z"},
		{"2026-12-01T10:00:00Z", "--node-repair=false", "kept", "NodeRepairDisabled", "NodeRepair"},
		{"2026-12-01T10:00:00Z", "--node-repair", "Unhealthy", "", "AcceleratedHardwareReady=False"},
	} {
		r, err := explainNode(t, "batch-a", "-f", file, "--now", tc.now, tc.flag)
		if err != nil {
			t.Fatal(err)
		}
		if r.Decision != tc.decision || r.Code != tc.code || !strings.Contains(r.Reason+r.Command, tc.says) {
			t.Errorf("%s %s: decision %q code %q (%s%s), want %q %q saying %q", tc.now, tc.flag, r.Decision, r.Code, r.Reason, r.Command, tc.decision, tc.code, tc.says)
		}
	}
}

// TestExplainPodNamesOverlay: with a NodeOverlay in the -f input that makes
// r6i the cheapest, explain pod's verdict is the engine's r6i node, named
// with the overlay and the list price, and the pool line agrees.
func TestExplainPodNamesOverlay(t *testing.T) {
	dir := t.TempDir()
	in := `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c6i, m6i, r6i]}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: r6i-discount}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [r6i]}]
  priceAdjustment: "-90%"
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`
	if err := os.WriteFile(filepath.Join(dir, "in.yaml"), []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd := explain.NewCmd(nil)
	cmd.SetOut(&stdout)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"pod", "default/web", "-f", dir, "-o", "json", "--region", "us-east-1"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var p pkgexplain.Pod
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	v := p.Verdict
	if v == nil || !strings.HasPrefix(v.InstanceType, "r6i.") || v.Overlays == nil || v.Overlays.Price != "r6i-discount" ||
		math.Abs(v.Overlays.ListPricePerHour*0.1-v.PricePerHour) > 1e-9 {
		t.Fatalf("verdict %+v overlays %+v; want an r6i node priced by r6i-discount at a tenth of its list price", v, v.Overlays)
	}
	if pl := pool(t, &p, "general"); !strings.Contains(pl.Reason, "cheapest "+v.InstanceType+" ") || !strings.Contains(pl.Reason, "NodeOverlay r6i-discount") {
		t.Errorf("pool line %q disagrees with the engine's %s", pl.Reason, v.InstanceType)
	}
}
