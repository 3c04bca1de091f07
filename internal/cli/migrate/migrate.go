package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	pkgmigrate "github.com/dovetail-sh/dovetail/pkg/migrate"
)

// Options holds the inputs of `dovetail migrate` and its dependencies.
type Options struct {
	ClusterName       string
	Region            string
	InterruptionQueue string
	Kubeconfig        string
	Context           string
	DryRun            bool
	Output            string // file for the manifests; "" stdout

	Stdout, Stderr io.Writer
	// AWS replaces the default AWS configuration chain (tests).
	AWS *aws.Config
	// Client replaces the kubeconfig's client (tests).
	Client client.Client
}

// NewCmd builds `dovetail migrate`. runF replaces Run in tests.
func NewCmd(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "migrate --cluster-name NAME [--dry-run] [-o FILE]",
		Short: "Move from Cluster Autoscaler: NodePools and EC2NodeClasses from the node groups, and the checklist",
		Long: `Read the cluster's EKS managed node groups and their Auto Scaling groups
(with Cluster Autoscaler's tags: k8s.io/cluster-autoscaler/enabled, the
node-template labels, taints and resources) through the AWS API, and write
one NodePool and EC2NodeClass per group that keep its labels, taints,
instance types, architecture, capacity type, subnets, security groups,
AMI family and node role, with limits from the group's maxSize times its
largest instance size.

Without --dry-run the objects that do not exist yet are created in the
cluster (existing ones are left alone and their diff printed); with
--dry-run nothing is written and the diff against what exists is printed.
The manifests go to stdout (or -o FILE), the diff and the checklist to
stderr. AWS credentials and region come from the default chain
(AWS_ENDPOINT_URL points it at the local emulator).`,
		Example: `  dovetail migrate --cluster-name prod --dry-run
  dovetail migrate --cluster-name prod -o pools.yaml`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if opts.ClusterName == "" {
				return cmdutil.BadInputf("--cluster-name is required: the EKS cluster whose node groups to read")
			}
			if opts.InterruptionQueue == "" {
				opts.InterruptionQueue = opts.ClusterName
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.ClusterName, "cluster-name", "", "the EKS cluster (required)")
	f.StringVar(&opts.Region, "region", "", "AWS region (default: the AWS configuration's)")
	f.StringVar(&opts.InterruptionQueue, "interruption-queue", "", "the SQS interruption queue to check (default: the cluster name)")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", cmdutil.KubeconfigFlagUsage)
	f.StringVar(&opts.Context, "context", "", "kubeconfig context (default: the current context)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print the objects and their diff against the cluster; create nothing")
	f.StringVarP(&opts.Output, "output", "o", "", "write the manifests to this file instead of stdout")
	return cmd
}

// Run reads AWS and the cluster, converts, prints (and creates), and
// prints the checklist.
func Run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var cfg aws.Config
	if opts.AWS != nil {
		cfg = *opts.AWS
	} else {
		var loadOpts []func(*awsconfig.LoadOptions) error
		if opts.Region != "" {
			loadOpts = append(loadOpts, awsconfig.WithRegion(opts.Region))
		}
		c, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
		if err != nil {
			return fmt.Errorf("loading the AWS configuration: %w", err)
		}
		cfg = c
	}
	if opts.Region != "" {
		cfg.Region = opts.Region
	}
	kube := opts.Client
	if kube == nil {
		rc, err := cmdutil.RESTConfig(opts.Kubeconfig, opts.Context)
		if err != nil {
			return err
		}
		kube, err = cmdutil.Client(rc)
		if err != nil {
			return err
		}
	}
	groups, clusterSGs, err := readGroups(ctx, cfg, opts.ClusterName)
	if err != nil {
		return err
	}
	res := pkgmigrate.Convert(groups, catalog.Builtin())

	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# dovetail migrate --cluster-name %s: %d node groups\n", opts.ClusterName, len(groups))
	for i := range res.NodeClasses {
		for _, o := range []any{res.NodeClasses[i], res.NodePools[i]} {
			data, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			buf.WriteString("---\n")
			buf.Write(stripNoise(data))
		}
	}
	if opts.Output != "" {
		if err := os.WriteFile(opts.Output, buf.Bytes(), 0o644); err != nil {
			return cmdutil.BadInputf("-o %s: %v", opts.Output, err)
		}
	} else if _, err := opts.Stdout.Write(buf.Bytes()); err != nil {
		return err
	}

	w := opts.Stderr
	fmt.Fprintf(w, "migrate: %d node groups of %s (cluster security groups %s)\n", len(groups), opts.ClusterName, strings.Join(clusterSGs, ","))
	for _, g := range groups {
		cas := "not managed by Cluster Autoscaler"
		if g.CASEnabled {
			cas = "Cluster Autoscaler enabled"
		}
		fmt.Fprintf(w, "  %-16s %s %s [%s] min %d max %d desired %d, %s\n", g.Name, g.CapacityType, g.AMIType, strings.Join(g.InstanceTypes, " "), g.MinSize, g.MaxSize, g.DesiredSize, cas)
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	created, err := diffAndApply(ctx, kube, res, opts.DryRun, w)
	if err != nil {
		return err
	}
	checklist(ctx, w, cfg, kube, opts, groups, res, created)
	return nil
}

// readGroups lists the node groups and their ASGs.
func readGroups(ctx context.Context, cfg aws.Config, cluster string) ([]pkgmigrate.Group, []string, error) {
	ek := eks.NewFromConfig(cfg)
	dc, err := ek.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		return nil, nil, awsErr("DescribeCluster", err)
	}
	var sgs []string
	if v := dc.Cluster.ResourcesVpcConfig; v != nil && v.ClusterSecurityGroupId != nil {
		sgs = []string{*v.ClusterSecurityGroupId}
	}
	var names []string
	p := eks.NewListNodegroupsPaginator(ek, &eks.ListNodegroupsInput{ClusterName: aws.String(cluster)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, awsErr("ListNodegroups", err)
		}
		names = append(names, page.Nodegroups...)
	}
	as := autoscaling.NewFromConfig(cfg)
	var out []pkgmigrate.Group
	for _, n := range names {
		d, err := ek.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(n)})
		if err != nil {
			return nil, nil, awsErr("DescribeNodegroup "+n, err)
		}
		var asg *astypes.AutoScalingGroup
		if r := d.Nodegroup.Resources; r != nil && len(r.AutoScalingGroups) > 0 && r.AutoScalingGroups[0].Name != nil {
			ao, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{*r.AutoScalingGroups[0].Name}})
			if err != nil {
				return nil, nil, awsErr("DescribeAutoScalingGroups", err)
			}
			if len(ao.AutoScalingGroups) > 0 {
				asg = &ao.AutoScalingGroups[0]
			}
		}
		out = append(out, pkgmigrate.FromEKS(d.Nodegroup, asg, sgs))
	}
	return out, sgs, nil
}

func awsErr(op string, err error) error {
	return fmt.Errorf("AWS %s: %w", op, err)
}

func stripNoise(data []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(data) {
		t := bytes.TrimSpace(line)
		if bytes.Equal(t, []byte("creationTimestamp: null")) || bytes.Equal(t, []byte("status: {}")) || bytes.Equal(t, []byte("disruption: {}")) {
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}

// diffAndApply prints, per object, "new" or its diff against the cluster's,
// and creates the new ones unless dryRun. It returns the names created.
func diffAndApply(ctx context.Context, kube client.Client, res *pkgmigrate.Result, dryRun bool, w io.Writer) ([]string, error) {
	var created []string
	objs := []client.Object{}
	for i := range res.NodeClasses {
		objs = append(objs, res.NodeClasses[i], res.NodePools[i])
	}
	fmt.Fprintln(w, "\nagainst the cluster:")
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		existing := o.DeepCopyObject().(client.Object)
		err := kube.Get(ctx, client.ObjectKeyFromObject(o), existing)
		switch {
		case apierrors.IsNotFound(err):
			if dryRun {
				fmt.Fprintf(w, "  %s %s: new (not created: --dry-run)\n", kind, o.GetName())
				continue
			}
			if err := kube.Create(ctx, o.DeepCopyObject().(client.Object)); err != nil {
				return created, fmt.Errorf("creating %s %s: %w", kind, o.GetName(), err)
			}
			created = append(created, kind+"/"+o.GetName())
			fmt.Fprintf(w, "  %s %s: created\n", kind, o.GetName())
		case err != nil:
			return created, fmt.Errorf("reading %s %s: %w", kind, o.GetName(), err)
		default:
			d := diff(specYAML(existing, o), specYAML(o, o))
			if d == "" {
				fmt.Fprintf(w, "  %s %s: exists, unchanged\n", kind, o.GetName())
				continue
			}
			fmt.Fprintf(w, "  %s %s: exists and differs (left alone); - cluster, + migrate:\n%s", kind, o.GetName(), d)
		}
	}
	return created, nil
}

// specYAML renders o's spec, limited to the fields migrate sets in
// proposed (the API server's defaults for the others are not a change).
func specYAML(o, proposed client.Object) []string {
	spec := func(x client.Object) map[string]any {
		var v any
		switch t := x.(type) {
		case *karpv1.NodePool:
			v = t.Spec
		case *awsv1.EC2NodeClass:
			v = t.Spec
		}
		data, _ := json.Marshal(v)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		return m
	}
	data, _ := yaml.Marshal(project(spec(o), spec(proposed)))
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// project keeps the keys of have that shape also has, recursively through
// objects; lists and values are kept whole.
func project(have, shape map[string]any) map[string]any {
	out := map[string]any{}
	for k, sv := range shape {
		hv, ok := have[k]
		if !ok {
			continue
		}
		hm, hok := hv.(map[string]any)
		sm, sok := sv.(map[string]any)
		if hok && sok {
			out[k] = project(hm, sm)
			continue
		}
		out[k] = hv
	}
	return out
}

// diff is a line diff (longest common subsequence), "" when equal.
func diff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	changed := false
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "      + %s\n", b[j])
			changed = true
			j++
		default:
			fmt.Fprintf(&out, "      - %s\n", a[i])
			changed = true
			i++
		}
	}
	if !changed {
		return ""
	}
	return out.String()
}

// Check states.
const (
	StateOK         = "OK"
	StateTodo       = "TODO"
	StateWarn       = "WARN"
	StateNotChecked = "NOT CHECKED"
)

// checklist prints the ordered steps and checks what it can.
func checklist(ctx context.Context, w io.Writer, cfg aws.Config, kube client.Client, opts *Options, groups []pkgmigrate.Group, res *pkgmigrate.Result, created []string) {
	fmt.Fprintln(w, "\nchecklist, in order:")
	step := 0
	item := func(state, what, detail string) {
		step++
		fmt.Fprintf(w, "  %2d. [%s] %s\n", step, state, what)
		if detail != "" {
			fmt.Fprintf(w, "      %s\n", detail)
		}
	}
	// 1. The interruption queue.
	if _, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(opts.InterruptionQueue)}); err != nil {
		item(StateTodo, "create the interruption queue "+opts.InterruptionQueue+" (SQS)", "not found: "+firstLine(err.Error()))
	} else {
		item(StateOK, "the interruption queue "+opts.InterruptionQueue+" exists (SQS)", "")
	}
	item(StateNotChecked, "route EC2 spot interruption, rebalance, scheduled change and instance state events to it (EventBridge rules)",
		"dovetail does not read EventBridge; see docs/aws.md for the four rules")
	// 2. Node role access.
	roles := map[string]bool{}
	for _, g := range groups {
		if g.NodeRole != "" {
			roles[g.NodeRole] = true
		}
	}
	var cm corev1.ConfigMap
	err := kube.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "aws-auth"}, &cm)
	for _, role := range slices.Sorted(mapsKeys(roles)) {
		switch {
		case err == nil && strings.Contains(cm.Data["mapRoles"], role):
			item(StateOK, "the node role "+role+" may join the cluster", "found in kube-system/aws-auth mapRoles")
		case err == nil:
			item(StateTodo, "give the node role "+role+" access to the cluster", "not in kube-system/aws-auth mapRoles; add it there or as an EKS access entry of type EC2_LINUX")
		default:
			item(StateNotChecked, "give the node role "+role+" access to the cluster (EKS access entry of type EC2_LINUX)",
				"no kube-system/aws-auth ConfigMap; check: aws eks list-access-entries --cluster-name "+opts.ClusterName)
		}
	}
	// 3. The NodePools.
	missing := 0
	for _, np := range res.NodePools {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(np), &karpv1.NodePool{}); err != nil {
			missing++
		}
	}
	if missing == 0 {
		item(StateOK, fmt.Sprintf("the %d NodePools and EC2NodeClasses are in the cluster", len(res.NodePools)), strings.Join(created, " "))
	} else {
		item(StateTodo, fmt.Sprintf("create the NodePools and EC2NodeClasses (%d of %d NodePools missing)", missing, len(res.NodePools)), "run without --dry-run, or kubectl apply the manifests")
	}
	item(StateNotChecked, "install the dovetail controller and check it is Ready", "")
	// 4. PDBs that would block draining the node groups.
	var pdbs policyv1.PodDisruptionBudgetList
	if err := kube.List(ctx, &pdbs); err != nil {
		item(StateNotChecked, "check PodDisruptionBudgets", err.Error())
	} else {
		var blocking []string
		for _, p := range pdbs.Items {
			if p.Status.ObservedGeneration > 0 && p.Status.DisruptionsAllowed == 0 {
				blocking = append(blocking, p.Namespace+"/"+p.Name)
			}
		}
		if len(blocking) == 0 {
			item(StateOK, fmt.Sprintf("no PodDisruptionBudget allows 0 disruptions (%d checked)", len(pdbs.Items)), "")
		} else {
			item(StateWarn, fmt.Sprintf("%d PodDisruptionBudgets allow 0 disruptions: draining the node groups will stall on them", len(blocking)), strings.Join(blocking, " "))
		}
	}
	// 5. Cluster Autoscaler at zero, before the node groups.
	var deps appsv1.DeploymentList
	cas := ""
	var replicas int32
	if err := kube.List(ctx, &deps); err == nil {
		for _, d := range deps.Items {
			if strings.Contains(d.Name, "cluster-autoscaler") {
				cas = d.Namespace + "/" + d.Name
				if d.Spec.Replicas != nil {
					replicas = *d.Spec.Replicas
				} else {
					replicas = 1
				}
			}
		}
	}
	switch {
	case cas == "":
		item(StateOK, "no Cluster Autoscaler Deployment runs", "")
	case replicas == 0:
		item(StateOK, "Cluster Autoscaler ("+cas+") is scaled to zero", "")
	default:
		item(StateTodo, fmt.Sprintf("scale Cluster Autoscaler (%s, %d replicas) to zero BEFORE shrinking the node groups", cas, replicas),
			"kubectl -n "+strings.Split(cas, "/")[0]+" scale deploy/"+strings.Split(cas, "/")[1]+" --replicas=0; otherwise it scales them back up")
	}
	// 6. The node groups themselves.
	for _, g := range groups {
		state := StateTodo
		if g.DesiredSize == 0 {
			state = StateOK
		}
		item(state, fmt.Sprintf("scale node group %s to zero (desired %d now), one group at a time, watching its pods move to dovetail's nodes", g.Name, g.DesiredSize),
			"aws eks update-nodegroup-config --cluster-name "+opts.ClusterName+" --nodegroup-name "+g.Name+" --scaling-config minSize=0,maxSize=1,desiredSize=0")
	}
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
