package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
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
	"github.com/dovetail-sh/dovetail/pkg/termtext"
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
		Long: `Read the cluster's EKS managed node groups and their Auto Scaling groups,
the cluster's self-managed Auto Scaling groups (tagged
kubernetes.io/cluster/NAME or k8s.io/cluster-autoscaler/NAME), Cluster
Autoscaler's tags (k8s.io/cluster-autoscaler/enabled, the node-template
labels, taints and resources) and the launch templates the groups use,
through the AWS API, and write one NodePool and EC2NodeClass per group that
keep its labels, taints, instance types, architecture, capacity type,
subnets, security groups, AMI (the launch template's, by id) and node role
or instance profile, with limits from the group's maxSize times its largest
instance size.

The checklist checks the interruption queue, the EventBridge rules that
route the four interruption kinds to it, each node role's EKS access entry
(or aws-auth entry), the objects, PodDisruptionBudgets, Cluster Autoscaler
and the groups' sizes.

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
	groups, info, err := readGroups(ctx, cfg, opts.ClusterName)
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
	fmt.Fprintf(w, "migrate: %d node groups of %s (cluster security groups %s)\n", len(groups), esc(opts.ClusterName), esc(strings.Join(info.securityGroups, ",")))
	for _, g := range groups {
		cas := "not managed by Cluster Autoscaler"
		if g.CASEnabled {
			cas = "Cluster Autoscaler enabled"
		}
		ami := g.AMIType
		if g.AMIID != "" {
			ami = g.AMIID
			if g.AMIFamily != "" {
				ami += " (" + g.AMIFamily + ")"
			}
		}
		kind := ""
		if g.SelfManaged {
			kind = " self-managed"
		}
		if !g.LaunchTemplate.IsZero() {
			kind += " launch template " + g.LaunchTemplate.String() + ","
		}
		fmt.Fprintf(w, "  %-16s%s %s %s [%s] min %d max %d desired %d, %s\n", esc(g.Name), esc(kind), esc(g.CapacityType), esc(ami), esc(strings.Join(g.InstanceTypes, " ")), g.MinSize, g.MaxSize, g.DesiredSize, cas)
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", esc(n))
	}
	created, err := diffAndApply(ctx, kube, res, opts.DryRun, w)
	if err != nil {
		return err
	}
	checklist(ctx, w, cfg, kube, opts, info, groups, res, created)
	return nil
}

// clusterInfo is what DescribeCluster says that migrate uses.
type clusterInfo struct {
	securityGroups []string
	// authMode is the cluster's access configuration: API, CONFIG_MAP or
	// API_AND_CONFIG_MAP ("" when EKS does not say).
	authMode string
}

// readGroups lists the managed node groups with their ASGs and launch
// templates, then the cluster's self-managed Auto Scaling groups.
func readGroups(ctx context.Context, cfg aws.Config, cluster string) ([]pkgmigrate.Group, clusterInfo, error) {
	var info clusterInfo
	ek := eks.NewFromConfig(cfg)
	dc, err := ek.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		return nil, info, awsErr("DescribeCluster", err)
	}
	if v := dc.Cluster.ResourcesVpcConfig; v != nil && v.ClusterSecurityGroupId != nil {
		info.securityGroups = []string{*v.ClusterSecurityGroupId}
	}
	if ac := dc.Cluster.AccessConfig; ac != nil {
		info.authMode = string(ac.AuthenticationMode)
	}
	var names []string
	p := eks.NewListNodegroupsPaginator(ek, &eks.ListNodegroupsInput{ClusterName: aws.String(cluster)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, info, awsErr("ListNodegroups", err)
		}
		names = append(names, page.Nodegroups...)
	}
	as := autoscaling.NewFromConfig(cfg)
	lts := &templates{ec2: ec2.NewFromConfig(cfg), iam: iam.NewFromConfig(cfg)}
	var out []pkgmigrate.Group
	managedASGs := map[string]bool{}
	for _, n := range names {
		d, err := ek.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(n)})
		if err != nil {
			return nil, info, awsErr("DescribeNodegroup "+n, err)
		}
		var asg *astypes.AutoScalingGroup
		if r := d.Nodegroup.Resources; r != nil && len(r.AutoScalingGroups) > 0 && r.AutoScalingGroups[0].Name != nil {
			managedASGs[*r.AutoScalingGroups[0].Name] = true
			ao, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{*r.AutoScalingGroups[0].Name}})
			if err != nil {
				return nil, info, awsErr("DescribeAutoScalingGroups", err)
			}
			if len(ao.AutoScalingGroups) > 0 {
				asg = &ao.AutoScalingGroups[0]
			}
		}
		g := pkgmigrate.FromEKS(d.Nodegroup, asg, info.securityGroups)
		if !g.LaunchTemplate.IsZero() {
			if err := lts.apply(ctx, &g, g.LaunchTemplate, false); err != nil {
				return nil, info, err
			}
		}
		out = append(out, g)
	}
	// Self-managed groups: every ASG of the cluster that no node group owns.
	ap := autoscaling.NewDescribeAutoScalingGroupsPaginator(as, &autoscaling.DescribeAutoScalingGroupsInput{})
	for ap.HasMorePages() {
		page, err := ap.NextPage(ctx)
		if err != nil {
			return nil, info, awsErr("DescribeAutoScalingGroups", err)
		}
		for i := range page.AutoScalingGroups {
			asg := &page.AutoScalingGroups[i]
			if managedASGs[aws.ToString(asg.AutoScalingGroupName)] || !pkgmigrate.SelfManaged(asg, cluster) {
				continue
			}
			g := pkgmigrate.FromASG(asg)
			if ref, ok := pkgmigrate.ASGLaunchTemplate(asg); ok {
				if err := lts.apply(ctx, &g, ref, true); err != nil {
					return nil, info, err
				}
			}
			out = append(out, g)
		}
	}
	return out, info, nil
}

// templates reads launch templates, their AMIs and instance profiles.
type templates struct {
	ec2 *ec2.Client
	iam *iam.Client
}

// apply reads the version of the template a group uses and applies it;
// for a self-managed group the instance profile's role becomes the group's
// node role (for the access check).
func (t *templates) apply(ctx context.Context, g *pkgmigrate.Group, ref pkgmigrate.LaunchTemplateRef, selfManaged bool) error {
	in := &ec2.DescribeLaunchTemplateVersionsInput{}
	if ref.ID != "" {
		in.LaunchTemplateId = aws.String(ref.ID)
	} else {
		in.LaunchTemplateName = aws.String(ref.Name)
	}
	if v := ref.Version; v != "" {
		in.Versions = []string{v}
	} else {
		in.Versions = []string{"$Default"}
	}
	out, err := t.ec2.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return awsErr("DescribeLaunchTemplateVersions "+ref.String()+" (of "+g.Name+")", err)
	}
	if len(out.LaunchTemplateVersions) == 0 {
		return fmt.Errorf("AWS DescribeLaunchTemplateVersions %s (of %s): no such version", ref, g.Name)
	}
	lt := pkgmigrate.FromLaunchTemplateVersion(&out.LaunchTemplateVersions[0])
	if lt.Ref.Version == "" { // the answer's version number, else what the group names
		lt.Ref.Version = ref.Version
	}
	var img *ec2types.Image
	if lt.ImageID != "" {
		io, err := t.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{lt.ImageID}})
		if err == nil && len(io.Images) > 0 {
			img = &io.Images[0]
		}
	}
	g.ApplyLaunchTemplate(lt, img)
	if selfManaged && g.InstanceProfile != "" {
		po, err := t.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(g.InstanceProfile)})
		if err == nil && po.InstanceProfile != nil && len(po.InstanceProfile.Roles) > 0 {
			g.NodeRole = aws.ToString(po.InstanceProfile.Roles[0].Arn)
		}
	}
	return nil
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
				fmt.Fprintf(w, "  %s %s: new (not created: --dry-run)\n", kind, esc(o.GetName()))
				continue
			}
			if err := kube.Create(ctx, o.DeepCopyObject().(client.Object)); err != nil {
				return created, fmt.Errorf("creating %s %s: %w", kind, o.GetName(), err)
			}
			created = append(created, kind+"/"+o.GetName())
			fmt.Fprintf(w, "  %s %s: created\n", kind, esc(o.GetName()))
		case err != nil:
			return created, fmt.Errorf("reading %s %s: %w", kind, o.GetName(), err)
		default:
			d := diff(specYAML(existing, o), specYAML(o, o))
			if d == "" {
				fmt.Fprintf(w, "  %s %s: exists, unchanged\n", kind, esc(o.GetName()))
				continue
			}
			fmt.Fprintf(w, "  %s %s: exists and differs (left alone); - cluster, + migrate:\n%s", kind, esc(o.GetName()), d)
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
			fmt.Fprintf(&out, "      + %s\n", esc(b[j]))
			changed = true
			j++
		default:
			fmt.Fprintf(&out, "      - %s\n", esc(a[i]))
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
func checklist(ctx context.Context, w io.Writer, cfg aws.Config, kube client.Client, opts *Options, info clusterInfo, groups []pkgmigrate.Group, res *pkgmigrate.Result, created []string) {
	fmt.Fprintln(w, "\nchecklist, in order:")
	step := 0
	item := func(state, what, detail string) {
		step++
		fmt.Fprintf(w, "  %2d. [%s] %s\n", step, state, esc(what))
		if detail != "" {
			fmt.Fprintf(w, "      %s\n", esc(detail))
		}
	}
	// 1. The interruption queue and 2. the rules that feed it.
	queueURL := ""
	if out, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(opts.InterruptionQueue)}); err != nil {
		item(StateTodo, "create the interruption queue "+opts.InterruptionQueue+" (SQS)", "not found: "+firstLine(err.Error()))
	} else {
		queueURL = aws.ToString(out.QueueUrl)
		item(StateOK, "the interruption queue "+opts.InterruptionQueue+" exists (SQS)", "")
	}
	checkRules(ctx, cfg, opts, queueURL, item)
	// 3. Node role access.
	checkAccess(ctx, cfg, kube, opts, info, groups, item)
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
		cmd := "aws eks update-nodegroup-config --cluster-name " + opts.ClusterName + " --nodegroup-name " + g.Name + " --scaling-config minSize=0,maxSize=1,desiredSize=0"
		kind := "node group"
		if g.SelfManaged {
			kind = "self-managed Auto Scaling group"
			cmd = "aws autoscaling update-auto-scaling-group --auto-scaling-group-name " + g.ASG + " --min-size 0 --desired-capacity 0"
		}
		item(state, fmt.Sprintf("scale %s %s to zero (desired %d now), one group at a time, watching its pods move to dovetail's nodes", kind, g.Name, g.DesiredSize), cmd)
	}
}

// checkRules lists the default event bus's rules and their targets and
// reports which of the four interruption kinds reach the queue.
func checkRules(ctx context.Context, cfg aws.Config, opts *Options, queueURL string, item func(state, what, detail string)) {
	what := "route EC2 spot interruption, rebalance, instance state and scheduled change events to " + opts.InterruptionQueue + " (EventBridge rules)"
	how := "see docs/aws.md for the four rules (aws events put-rule / put-targets)"
	queueARN, account := pkgmigrate.QueueARN(queueURL, cfg.Region)
	if queueARN == "" {
		item(StateTodo, what, "the queue does not exist (or its URL names no account); create it first, then "+how)
		return
	}
	eb := eventbridge.NewFromConfig(cfg)
	covered := map[pkgmigrate.EventKind][]string{}
	var problems []string
	// ListRules and ListTargetsByRule have no SDK paginator: follow
	// NextToken by hand.
	var rules []ebtypes.Rule
	for in := (&eventbridge.ListRulesInput{}); ; {
		page, err := eb.ListRules(ctx, in)
		if err != nil {
			item(StateNotChecked, what, "EventBridge ListRules: "+firstLine(err.Error()))
			return
		}
		rules = append(rules, page.Rules...)
		if aws.ToString(page.NextToken) == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	for _, r := range rules {
		name := aws.ToString(r.Name)
		if r.State != ebtypes.RuleStateEnabled || aws.ToString(r.EventPattern) == "" {
			continue
		}
		toQueue := false
		for in := (&eventbridge.ListTargetsByRuleInput{Rule: r.Name}); ; {
			tpage, err := eb.ListTargetsByRule(ctx, in)
			if err != nil {
				item(StateNotChecked, what, "EventBridge ListTargetsByRule "+name+": "+firstLine(err.Error()))
				return
			}
			for _, t := range tpage.Targets {
				toQueue = toQueue || aws.ToString(t.Arn) == queueARN
			}
			if aws.ToString(tpage.NextToken) == "" {
				break
			}
			in.NextToken = tpage.NextToken
		}
		if !toQueue {
			continue
		}
		kinds, err := pkgmigrate.PatternKinds(aws.ToString(r.EventPattern), account, cfg.Region)
		if err != nil {
			problems = append(problems, name+": "+err.Error())
			continue
		}
		for _, k := range kinds {
			covered[k] = append(covered[k], name)
		}
	}
	var have, missing []string
	for _, k := range pkgmigrate.EventKinds {
		if rules := covered[k]; len(rules) > 0 {
			have = append(have, fmt.Sprintf("%s (%s)", k, strings.Join(rules, ",")))
		} else {
			missing = append(missing, string(k))
		}
	}
	detail := ""
	if len(have) > 0 {
		detail = "routed to " + queueARN + ": " + strings.Join(have, "; ")
	}
	if len(problems) > 0 {
		detail += "; patterns not read: " + strings.Join(problems, "; ")
	}
	if len(missing) == 0 {
		item(StateOK, "EventBridge rules route every interruption kind to "+opts.InterruptionQueue, detail)
		return
	}
	if detail != "" {
		detail += "; "
	}
	item(StateTodo, what, detail+"no enabled rule targeting "+queueARN+" matches: "+strings.Join(missing, ", ")+"; "+how)
}

// checkAccess checks that each node role may join the cluster: an EKS
// access entry of type EC2_LINUX (or STANDARD in system:nodes), or a
// kube-system/aws-auth mapRoles entry, as the cluster's authentication
// mode allows.
func checkAccess(ctx context.Context, cfg aws.Config, kube client.Client, opts *Options, info clusterInfo, groups []pkgmigrate.Group, item func(state, what, detail string)) {
	roles := map[string]bool{}
	for _, g := range groups {
		if g.NodeRole != "" {
			roles[g.NodeRole] = true
		}
	}
	if len(roles) == 0 {
		return
	}
	useAPI, useConfigMap := info.authMode != string(ekstypes.AuthenticationModeConfigMap), info.authMode != string(ekstypes.AuthenticationModeApi)
	// Access entries.
	entries := map[string]bool{}
	var entriesErr error
	if useAPI {
		ek := eks.NewFromConfig(cfg)
		p := eks.NewListAccessEntriesPaginator(ek, &eks.ListAccessEntriesInput{ClusterName: aws.String(opts.ClusterName)})
		for p.HasMorePages() && entriesErr == nil {
			page, err := p.NextPage(ctx)
			if err != nil {
				entriesErr = err
				break
			}
			for _, a := range page.AccessEntries {
				entries[a] = true
			}
		}
	}
	var cm corev1.ConfigMap
	cmErr := errors.New("the cluster's authentication mode is API: aws-auth is not read by EKS")
	if useConfigMap {
		cmErr = kube.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "aws-auth"}, &cm)
	}
	create := "aws eks create-access-entry --cluster-name " + opts.ClusterName + " --type EC2_LINUX --principal-arn "
	for _, role := range slices.Sorted(mapsKeys(roles)) {
		what := "the node role " + role + " may join the cluster"
		var why []string
		if useAPI && entriesErr == nil && entries[role] {
			d, err := eks.NewFromConfig(cfg).DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: aws.String(opts.ClusterName), PrincipalArn: aws.String(role)})
			switch {
			case err != nil:
				why = append(why, "EKS DescribeAccessEntry: "+firstLine(err.Error()))
			case aws.ToString(d.AccessEntry.Type) == "EC2_LINUX" || (aws.ToString(d.AccessEntry.Type) == "STANDARD" && slices.Contains(d.AccessEntry.KubernetesGroups, "system:nodes")):
				item(StateOK, what, "EKS access entry of type "+aws.ToString(d.AccessEntry.Type))
				continue
			default:
				why = append(why, "its EKS access entry has type "+aws.ToString(d.AccessEntry.Type)+", not EC2_LINUX")
			}
		} else if useAPI && entriesErr != nil {
			why = append(why, "EKS ListAccessEntries: "+firstLine(entriesErr.Error()))
		} else if useAPI {
			why = append(why, "no EKS access entry")
		}
		if useConfigMap && cmErr == nil && (strings.Contains(cm.Data["mapRoles"], role) || strings.Contains(cm.Data["mapRoles"], stripRolePath(role))) {
			item(StateOK, what, "found in kube-system/aws-auth mapRoles")
			continue
		}
		switch {
		case useConfigMap && cmErr == nil:
			why = append(why, "not in kube-system/aws-auth mapRoles")
		case useConfigMap && apierrors.IsNotFound(cmErr):
			why = append(why, "no kube-system/aws-auth ConfigMap")
		case useConfigMap:
			why = append(why, "reading kube-system/aws-auth: "+firstLine(cmErr.Error()))
		}
		// TODO when every place the role could be granted was read; NOT
		// CHECKED when one of them could not be.
		state := StateTodo
		if (useAPI && entriesErr != nil) || (useConfigMap && cmErr != nil && !apierrors.IsNotFound(cmErr)) {
			state = StateNotChecked
		}
		fix := create + role
		if !useAPI {
			fix = "add it to kube-system/aws-auth mapRoles (the cluster's authentication mode is CONFIG_MAP)"
		}
		item(state, "give the node role "+role+" access to the cluster", strings.Join(why, "; ")+"; "+fix)
	}
}

// stripRolePath drops the path of a role ARN (aws-auth wants it without).
func stripRolePath(arn string) string {
	prefix, rest, ok := strings.Cut(arn, ":role/")
	if !ok {
		return arn
	}
	return prefix + ":role/" + rest[strings.LastIndex(rest, "/")+1:]
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

// esc is the one escaping of names and messages from AWS and the cluster
// in text output (termtext.Escape).
func esc(s string) string { return termtext.Escape(s) }
