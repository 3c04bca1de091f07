package migrate

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// Cluster Autoscaler's Auto Scaling group tags.
const (
	TagEnabled       = "k8s.io/cluster-autoscaler/enabled"
	tagTemplateLabel = "k8s.io/cluster-autoscaler/node-template/label/"
	tagTemplateTaint = "k8s.io/cluster-autoscaler/node-template/taint/"
	tagTemplateRes   = "k8s.io/cluster-autoscaler/node-template/resources/"
)

// Group is one node group as read from AWS.
type Group struct {
	Name           string            `json:"name"`
	ASG            string            `json:"autoScalingGroup,omitempty"`
	InstanceTypes  []string          `json:"instanceTypes"`
	CapacityType   string            `json:"capacityType"` // on-demand or spot
	AMIType        string            `json:"amiType"`
	Labels         map[string]string `json:"labels,omitempty"`
	Taints         []corev1.Taint    `json:"taints,omitempty"`
	MinSize        int32             `json:"minSize"`
	MaxSize        int32             `json:"maxSize"`
	DesiredSize    int32             `json:"desiredSize"`
	Subnets        []string          `json:"subnets"`
	SecurityGroups []string          `json:"securityGroups"`
	NodeRole       string            `json:"nodeRole"`
	CASEnabled     bool              `json:"clusterAutoscalerEnabled"`
	Resources      map[string]string `json:"templateResources,omitempty"`
	// SelfManaged is set for an Auto Scaling group without an EKS node
	// group (FromASG).
	SelfManaged bool `json:"selfManaged,omitempty"`
	// LaunchTemplate is the template the group launches from, and AMIID,
	// AMIFamily, AMIArch and InstanceProfile what it sets
	// (ApplyLaunchTemplate). AMIFamily is "" when neither the AMI's name nor
	// the user data tells it.
	LaunchTemplate  LaunchTemplateRef `json:"launchTemplate,omitzero"`
	AMIID           string            `json:"amiID,omitempty"`
	AMIFamily       string            `json:"amiFamily,omitempty"`
	AMIArch         string            `json:"amiArch,omitempty"`
	InstanceProfile string            `json:"instanceProfile,omitempty"`
}

// FromEKS reads a managed node group and its Auto Scaling group (nil when
// EKS named none or it was not found); securityGroups are the cluster's
// (a managed node group without a launch template uses the cluster
// security group).
func FromEKS(ng *ekstypes.Nodegroup, asg *astypes.AutoScalingGroup, securityGroups []string) Group {
	g := Group{Name: deref(ng.NodegroupName), InstanceTypes: slices.Clone(ng.InstanceTypes), AMIType: string(ng.AmiType),
		Labels: map[string]string{}, Subnets: slices.Clone(ng.Subnets), SecurityGroups: slices.Clone(securityGroups), NodeRole: deref(ng.NodeRole)}
	g.CapacityType = karpv1.CapacityTypeOnDemand
	if ng.CapacityType == ekstypes.CapacityTypesSpot {
		g.CapacityType = karpv1.CapacityTypeSpot
	}
	if sc := ng.ScalingConfig; sc != nil {
		g.MinSize, g.MaxSize, g.DesiredSize = deref32(sc.MinSize), deref32(sc.MaxSize), deref32(sc.DesiredSize)
	}
	for k, v := range ng.Labels {
		g.Labels[k] = v
	}
	for _, t := range ng.Taints {
		g.Taints = append(g.Taints, corev1.Taint{Key: deref(t.Key), Value: deref(t.Value), Effect: eksEffect(t.Effect)})
	}
	if asg != nil {
		g.ASG = deref(asg.AutoScalingGroupName)
		g.MaxSize = max(g.MaxSize, deref32(asg.MaxSize))
		applyASGTags(&g, asg)
	}
	if lt := ng.LaunchTemplate; lt != nil {
		g.LaunchTemplate = LaunchTemplateRef{ID: deref(lt.Id), Name: deref(lt.Name), Version: deref(lt.Version)}
	}
	return g
}

// applyASGTags reads Cluster Autoscaler's tags of an Auto Scaling group:
// enabled, node-template labels, taints (a node group's own taint of the
// same key wins) and resources.
func applyASGTags(g *Group, asg *astypes.AutoScalingGroup) {
	for _, tg := range asg.Tags {
		k, v := deref(tg.Key), deref(tg.Value)
		switch {
		case k == TagEnabled:
			g.CASEnabled = v == "true"
		case strings.HasPrefix(k, tagTemplateLabel):
			g.Labels[strings.TrimPrefix(k, tagTemplateLabel)] = v
		case strings.HasPrefix(k, tagTemplateTaint):
			key := strings.TrimPrefix(k, tagTemplateTaint)
			val, eff, _ := strings.Cut(v, ":")
			if !slices.ContainsFunc(g.Taints, func(t corev1.Taint) bool { return t.Key == key }) {
				g.Taints = append(g.Taints, corev1.Taint{Key: key, Value: val, Effect: corev1.TaintEffect(eff)})
			}
		case strings.HasPrefix(k, tagTemplateRes):
			if g.Resources == nil {
				g.Resources = map[string]string{}
			}
			g.Resources[strings.TrimPrefix(k, tagTemplateRes)] = v
		}
	}
}

func eksEffect(e ekstypes.TaintEffect) corev1.TaintEffect {
	switch e {
	case ekstypes.TaintEffectNoExecute:
		return corev1.TaintEffectNoExecute
	case ekstypes.TaintEffectPreferNoSchedule:
		return corev1.TaintEffectPreferNoSchedule
	}
	return corev1.TaintEffectNoSchedule
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func deref32(v *int32) int32 {
	if v == nil {
		return 0
	}
	return *v
}

// Result is what Convert writes.
type Result struct {
	NodePools   []*karpv1.NodePool
	NodeClasses []*awsv1.EC2NodeClass
	// Notes say what was left out or guessed, per group.
	Notes []string
}

var nameRe = regexp.MustCompile(`[^a-z0-9-]+`)

// Name is the NodePool (and EC2NodeClass) name of a group.
func Name(group string) string {
	n := strings.Trim(nameRe.ReplaceAllString(strings.ToLower(group), "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

// restrictedLabel reports label keys a NodePool template may not carry.
func restrictedLabel(k string) bool {
	domain, _, ok := strings.Cut(k, "/")
	if !ok {
		return false
	}
	if domain == "node-restriction.kubernetes.io" {
		return false // the one kubernetes.io domain nodes may label themselves with
	}
	for _, d := range []string{"kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws", "eks.amazonaws.com"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// amiFamily maps an EKS amiType to an EC2NodeClass AMI family and alias.
func amiFamily(amiType string) (family, alias string, ok bool) {
	switch {
	case strings.HasPrefix(amiType, "AL2023"):
		return awsv1.AMIFamilyAL2023, "al2023@latest", true
	case strings.HasPrefix(amiType, "BOTTLEROCKET"):
		return awsv1.AMIFamilyBottlerocket, "bottlerocket@latest", true
	case strings.HasPrefix(amiType, "AL2_"):
		return awsv1.AMIFamilyAL2, "al2@latest", true
	}
	return "", "", false
}

// Convert writes one NodePool and one EC2NodeClass per group. Groups that
// cannot be converted (Windows AMIs, no instance types) are left out with
// a note; so are labels in restricted domains.
func Convert(groups []Group, cat *catalog.Catalog) *Result {
	out := &Result{}
	for _, g := range slices.SortedFunc(slices.Values(groups), func(a, b Group) int { return cmp.Compare(a.Name, b.Name) }) {
		name := Name(g.Name)
		var amiTerms []awsv1.AMISelectorTerm
		var family *string
		switch {
		case g.AMIID != "" && (g.AMIFamily == awsv1.AMIFamilyAL2023 || g.AMIFamily == awsv1.AMIFamilyAL2 || g.AMIFamily == awsv1.AMIFamilyBottlerocket):
			// The launch template's own AMI, pinned by id.
			amiTerms = []awsv1.AMISelectorTerm{{ID: g.AMIID}}
			family = &g.AMIFamily
		case g.AMIID != "":
			what := "neither its name nor the launch template's user data tells its AMI family"
			if g.AMIFamily != "" {
				what = "its AMI family " + g.AMIFamily + " is not one dovetail supports"
			}
			out.Notes = append(out.Notes, fmt.Sprintf("%s: launch template %s sets AMI %s, but %s; not converted", g.Name, g.LaunchTemplate, g.AMIID, what))
			continue
		default:
			_, alias, ok := amiFamily(g.AMIType)
			if !ok {
				out.Notes = append(out.Notes, fmt.Sprintf("%s: AMI type %q has no EC2NodeClass AMI family dovetail supports; not converted", g.Name, g.AMIType))
				continue
			}
			amiTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
		}
		if len(g.InstanceTypes) == 0 {
			where := "the group and its launch template set none"
			if g.LaunchTemplate.IsZero() {
				where = "the group sets none and has no launch template"
			}
			out.Notes = append(out.Notes, fmt.Sprintf("%s: no instance types (%s); not converted", g.Name, where))
			continue
		}
		var archs []string
		var maxCPU, maxMem int64
		for _, it := range g.InstanceTypes {
			t, ok := cat.Type(it)
			if !ok {
				out.Notes = append(out.Notes, fmt.Sprintf("%s: instance type %s is not in the built-in catalog; its size is not in the limits", g.Name, it))
				continue
			}
			if !slices.Contains(archs, t.Arch) {
				archs = append(archs, t.Arch)
			}
			maxCPU = max(maxCPU, int64(t.VCPU))
			maxMem = max(maxMem, t.MemoryMiB)
		}
		if len(archs) == 0 {
			archs = []string{karpv1.ArchitectureAmd64}
			if strings.Contains(g.AMIType, "ARM_64") || g.AMIArch == "arm64" {
				archs = []string{"arm64"}
			}
		}
		if g.AMIArch != "" && !slices.Equal(archs, []string{g.AMIArch}) {
			out.Notes = append(out.Notes, fmt.Sprintf("%s: the launch template's AMI %s is %s but the instance types are %s; kept to %s", g.Name, g.AMIID, g.AMIArch, strings.Join(archs, ","), g.AMIArch))
			archs = []string{g.AMIArch}
		}
		slices.Sort(archs)
		labels := map[string]string{}
		for k, v := range g.Labels {
			if restrictedLabel(k) {
				out.Notes = append(out.Notes, fmt.Sprintf("%s: label %s=%s is in a domain NodePools may not set; left out", g.Name, k, v))
				continue
			}
			labels[k] = v
		}
		np := &karpv1.NodePool{
			TypeMeta:   metav1.TypeMeta{APIVersion: karpv1.Group + "/v1", Kind: "NodePool"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"dovetail.sh/migrated-from": Name(g.Name)}},
		}
		spec := &np.Spec.Template.Spec
		np.Spec.Template.Labels = labels
		types := slices.Sorted(slices.Values(g.InstanceTypes))
		spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types},
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: strings.Split(g.CapacityType, ",")},
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: archs},
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		}
		spec.Taints = slices.Clone(g.Taints)
		spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: name}
		if g.MaxSize > 0 && maxCPU > 0 {
			np.Spec.Limits = karpv1.Limits{
				corev1.ResourceCPU:    *resource.NewQuantity(int64(g.MaxSize)*maxCPU, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(g.MaxSize)*maxMem<<20, resource.BinarySI),
			}
		}
		nc := &awsv1.EC2NodeClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.Group + "/v1", Kind: "EC2NodeClass"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"dovetail.sh/migrated-from": Name(g.Name)}},
		}
		nc.Spec.AMIFamily = family // nil with an alias, which implies it
		nc.Spec.AMISelectorTerms = amiTerms
		for _, s := range g.Subnets {
			nc.Spec.SubnetSelectorTerms = append(nc.Spec.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: s})
		}
		for _, s := range g.SecurityGroups {
			nc.Spec.SecurityGroupSelectorTerms = append(nc.Spec.SecurityGroupSelectorTerms, awsv1.SecurityGroupSelectorTerm{ID: s})
		}
		if g.InstanceProfile == "" && !strings.Contains(g.NodeRole, ":role/") {
			out.Notes = append(out.Notes, fmt.Sprintf("%s: neither a node role nor an instance profile is known (the launch template names no profile); set spec.role of EC2NodeClass %s by hand", g.Name, name))
		}
		switch {
		case g.InstanceProfile != "":
			// A self-managed group's launch template names its profile;
			// keep it (EC2NodeClass takes a role or a profile, not both).
			nc.Spec.InstanceProfile = &g.InstanceProfile
		default:
			if _, role, ok := strings.Cut(g.NodeRole, ":role/"); ok {
				nc.Spec.Role = role[strings.LastIndex(role, "/")+1:]
			}
		}
		for r, v := range g.Resources {
			out.Notes = append(out.Notes, fmt.Sprintf("%s: CAS template resource %s=%s is not carried over: dovetail knows each instance type's resources", g.Name, r, v))
		}
		out.NodePools = append(out.NodePools, np)
		out.NodeClasses = append(out.NodeClasses, nc)
	}
	slices.Sort(out.Notes)
	return out
}
