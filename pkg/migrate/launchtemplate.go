package migrate

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// LaunchTemplateRef names the launch template (and version) a group uses.
type LaunchTemplateRef struct {
	ID      string `json:"id,omitempty"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// IsZero reports whether no template is named.
func (r LaunchTemplateRef) IsZero() bool { return r.ID == "" && r.Name == "" }

// String is the template's name (or id) and version, for messages.
func (r LaunchTemplateRef) String() string {
	n := r.Name
	if n == "" {
		n = r.ID
	}
	if r.Version != "" {
		n += " version " + r.Version
	}
	return n
}

// LaunchTemplate is what one launch-template version sets that a
// NodePool or EC2NodeClass keeps.
type LaunchTemplate struct {
	Ref          LaunchTemplateRef
	ImageID      string
	InstanceType string
	// SecurityGroups are the template's, its network interfaces' included.
	SecurityGroups []string
	// InstanceProfile is the profile's name (from its name or ARN).
	InstanceProfile string
	// UserDataFamily is the AMI family the user data is written for
	// (nodeadm: AL2023, TOML: Bottlerocket, bootstrap.sh: AL2), "" when
	// there is none or it says nothing.
	UserDataFamily string
	// Spot is set when the template asks for spot instances.
	Spot bool
}

// FromLaunchTemplateVersion reads an EC2 DescribeLaunchTemplateVersions
// answer.
func FromLaunchTemplateVersion(v *ec2types.LaunchTemplateVersion) LaunchTemplate {
	lt := LaunchTemplate{Ref: LaunchTemplateRef{ID: deref(v.LaunchTemplateId), Name: deref(v.LaunchTemplateName)}}
	if v.VersionNumber != nil {
		lt.Ref.Version = strconv.FormatInt(*v.VersionNumber, 10)
	}
	d := v.LaunchTemplateData
	if d == nil {
		return lt
	}
	lt.ImageID, lt.InstanceType = deref(d.ImageId), string(d.InstanceType)
	lt.SecurityGroups = slices.Clone(d.SecurityGroupIds)
	for _, ni := range d.NetworkInterfaces {
		for _, g := range ni.Groups {
			if !slices.Contains(lt.SecurityGroups, g) {
				lt.SecurityGroups = append(lt.SecurityGroups, g)
			}
		}
	}
	if p := d.IamInstanceProfile; p != nil {
		lt.InstanceProfile = deref(p.Name)
		if lt.InstanceProfile == "" {
			if _, rest, ok := strings.Cut(deref(p.Arn), ":instance-profile/"); ok {
				lt.InstanceProfile = rest[strings.LastIndex(rest, "/")+1:]
			}
		}
	}
	if m := d.InstanceMarketOptions; m != nil && m.MarketType == ec2types.MarketTypeSpot {
		lt.Spot = true
	}
	if ud := deref(d.UserData); ud != "" {
		raw, err := base64.StdEncoding.DecodeString(ud)
		if err != nil {
			raw = []byte(ud)
		}
		lt.UserDataFamily = userDataFamily(string(raw))
	}
	return lt
}

// userDataFamily recognises the bootstrap format of user data.
func userDataFamily(s string) string {
	switch {
	case strings.Contains(s, "application/node.eks.aws") || strings.Contains(s, "kind: NodeConfig"):
		return awsv1.AMIFamilyAL2023
	case strings.Contains(s, "[settings.kubernetes]") || strings.Contains(s, "[settings]"):
		return awsv1.AMIFamilyBottlerocket
	case strings.Contains(s, "/etc/eks/bootstrap.sh"):
		return awsv1.AMIFamilyAL2
	}
	return ""
}

// imageFamily recognises an EKS-optimized or Bottlerocket AMI by its name.
func imageFamily(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "windows"):
		return "Windows"
	case strings.Contains(n, "bottlerocket"):
		return awsv1.AMIFamilyBottlerocket
	case strings.Contains(n, "al2023"):
		return awsv1.AMIFamilyAL2023
	case strings.HasPrefix(n, "amazon-eks-"):
		return awsv1.AMIFamilyAL2
	}
	return ""
}

// ApplyLaunchTemplate applies what the group's launch template sets: its
// instance type when the group lists none, its AMI (img is the AMI as
// DescribeImages reports it, nil when unknown; its name or the user data
// gives the family), its security groups instead of the cluster's, its
// instance profile, and spot when it asks for it.
func (g *Group) ApplyLaunchTemplate(lt LaunchTemplate, img *ec2types.Image) {
	g.LaunchTemplate = lt.Ref
	if len(g.InstanceTypes) == 0 && lt.InstanceType != "" {
		g.InstanceTypes = []string{lt.InstanceType}
	}
	if len(lt.SecurityGroups) > 0 {
		g.SecurityGroups = slices.Clone(lt.SecurityGroups)
	}
	if lt.InstanceProfile != "" {
		g.InstanceProfile = lt.InstanceProfile
	}
	if lt.Spot {
		g.CapacityType = karpv1.CapacityTypeSpot
	}
	if lt.ImageID == "" {
		return
	}
	g.AMIID = lt.ImageID
	if img != nil {
		g.AMIFamily = imageFamily(deref(img.Name))
		if img.Architecture == ec2types.ArchitectureValuesArm64 {
			g.AMIArch = "arm64"
		} else if img.Architecture == ec2types.ArchitectureValuesX8664 {
			g.AMIArch = karpv1.ArchitectureAmd64
		}
	}
	if g.AMIFamily == "" {
		g.AMIFamily = lt.UserDataFamily
	}
}

// ASGLaunchTemplate returns the launch template an Auto Scaling group
// launches from: its own, or its mixed instances policy's.
func ASGLaunchTemplate(asg *astypes.AutoScalingGroup) (LaunchTemplateRef, bool) {
	spec := asg.LaunchTemplate
	if spec == nil && asg.MixedInstancesPolicy != nil && asg.MixedInstancesPolicy.LaunchTemplate != nil {
		spec = asg.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification
	}
	if spec == nil {
		return LaunchTemplateRef{}, false
	}
	r := LaunchTemplateRef{ID: deref(spec.LaunchTemplateId), Name: deref(spec.LaunchTemplateName), Version: deref(spec.Version)}
	return r, !r.IsZero()
}

// SelfManaged reports whether an Auto Scaling group is a node group of the
// cluster that EKS does not manage: tagged kubernetes.io/cluster/CLUSTER
// (owned or shared) or k8s.io/cluster-autoscaler/CLUSTER, and without EKS's
// eks:nodegroup-name tag.
func SelfManaged(asg *astypes.AutoScalingGroup, cluster string) bool {
	mine := false
	for _, t := range asg.Tags {
		switch deref(t.Key) {
		case "eks:nodegroup-name":
			return false
		case "kubernetes.io/cluster/" + cluster, "k8s.io/cluster-autoscaler/" + cluster:
			mine = true
		}
	}
	return mine
}

// FromASG reads a self-managed Auto Scaling group: its sizes, subnets, the
// mixed instances policy's instance types and capacity type (spot when no
// on-demand capacity is asked for, both when it is mixed) and CAS's tags.
// The launch template is applied afterwards (ApplyLaunchTemplate).
func FromASG(asg *astypes.AutoScalingGroup) Group {
	g := Group{Name: deref(asg.AutoScalingGroupName), ASG: deref(asg.AutoScalingGroupName), SelfManaged: true, Labels: map[string]string{},
		MinSize: deref32(asg.MinSize), MaxSize: deref32(asg.MaxSize), DesiredSize: deref32(asg.DesiredCapacity), CapacityType: karpv1.CapacityTypeOnDemand}
	for _, s := range strings.Split(deref(asg.VPCZoneIdentifier), ",") {
		if s = strings.TrimSpace(s); s != "" {
			g.Subnets = append(g.Subnets, s)
		}
	}
	if mp := asg.MixedInstancesPolicy; mp != nil {
		if mp.LaunchTemplate != nil {
			for _, o := range mp.LaunchTemplate.Overrides {
				if t := deref(o.InstanceType); t != "" && !slices.Contains(g.InstanceTypes, t) {
					g.InstanceTypes = append(g.InstanceTypes, t)
				}
			}
		}
		if d := mp.InstancesDistribution; d != nil {
			base, pct := deref32(d.OnDemandBaseCapacity), int32(100)
			if d.OnDemandPercentageAboveBaseCapacity != nil {
				pct = *d.OnDemandPercentageAboveBaseCapacity
			}
			switch {
			case base == 0 && pct == 0:
				g.CapacityType = karpv1.CapacityTypeSpot
			case pct < 100:
				g.CapacityType = CapacityTypeMixed
			}
		}
	}
	applyASGTags(&g, asg)
	return g
}

// CapacityTypeMixed is the capacity type of a group that runs both spot
// and on-demand instances: its NodePool allows both.
const CapacityTypeMixed = "spot,on-demand"
