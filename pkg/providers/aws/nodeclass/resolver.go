package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// Condition reasons.
const (
	ReasonResolved                = "Resolved"
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMINotFound             = "AMINotFound"
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	// ReasonNotSupported: the class asks for something dovetail does not
	// do (launching into capacity reservations).
	ReasonNotSupported = "NotSupported"
	// ReasonSupported: every field the class sets is acted on.
	ReasonSupported = "Supported"
	// ReasonSpotPricesLive and ReasonSpotPricesUnavailable are the
	// reasons of SpotPricesReady.
	ReasonSpotPricesLive        = "LiveSpotPrices"
	ReasonSpotPricesUnavailable = "SpotPricesUnavailable"
	// ReasonValid and ReasonValidationFailed are the reasons of
	// ValidationSucceeded (EC2NodeClass.RuntimeValidate).
	ReasonValid            = "Valid"
	ReasonValidationFailed = "ValidationFailed"
)

// Tag keys dovetail puts on what it creates.
const (
	TagClusterPrefix = "kubernetes.io/cluster/"
	TagRegion        = "topology.kubernetes.io/region"
)

// Resolver resolves EC2NodeClasses. Its fields are dependencies; it is safe
// for concurrent use.
type Resolver struct {
	EC2 *ec2.Client
	SSM *ssm.Client
	IAM *iam.Client
	// ClusterName and Region scope tags and instance-profile names.
	ClusterName, Region string
	// KubernetesVersion (major.minor) selects the alias SSM parameters.
	KubernetesVersion string
	// Clock stamps conditions.
	Clock clock.PassiveClock
	// SpotPrices, when set, reports whether spot prices are live: known is
	// false before the first price load, fallback is "" when live and
	// otherwise says what stands in. Resolve turns it into the
	// SpotPricesReady condition.
	SpotPrices func() (fallback string, known bool)
	// Recorder, when set, gets a SpotPricesUnavailable warning event on a
	// class whose SpotPricesReady turns False.
	Recorder events.EventRecorder
	// ObserveSubnets, when set, receives each subnet's
	// AvailableIpAddressCount after Subnets describes them, with the time
	// the description was asked for (the launch's subnet choice).
	ObserveSubnets func(at time.Time, free map[string]int64)
	// DisableDryRun (the peer's DISABLE_DRY_RUN) skips the dry-run
	// launch calls that otherwise validate a class's resolved parameters
	// (dryrun.go); ValidationSucceeded then reflects RuntimeValidate only.
	DisableDryRun bool
	// DryRunTTL is how long a passed dry-run validation is reused for an
	// unchanged class and resolution (default DefaultDryRunTTL); a failed
	// one is checked again after at most DefaultDryRunFailureTTL.
	DryRunTTL time.Duration

	dryRuns dryRunCache
}

// Resolve returns a copy of nc with status.subnets, securityGroups, amis,
// instanceProfile and the conditions filled in. It returns an error only
// when an AWS call fails; selectors that match nothing are False
// conditions on the returned class.
func (r *Resolver) Resolve(ctx context.Context, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, error) {
	out := nc.DeepCopy()
	now := r.now()
	subnets, err := r.Subnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return nil, err
	}
	sgs, err := r.SecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return nil, err
	}
	amis, err := r.AMIs(ctx, nc)
	if err != nil {
		return nil, err
	}
	profile, profileErr := r.InstanceProfile(ctx, nc)
	if profileErr != nil && !errors.Is(profileErr, ErrInstanceProfileNotFound) {
		return nil, profileErr
	}

	out.Status.Subnets = subnets
	if len(subnets) == 0 {
		out.SetCondition(awsv1.ConditionTypeSubnetsReady, metav1.ConditionFalse, ReasonSubnetsNotFound,
			"no subnet matches spec.subnetSelectorTerms "+describeSubnetTerms(nc.Spec.SubnetSelectorTerms), now)
	} else {
		out.SetCondition(awsv1.ConditionTypeSubnetsReady, metav1.ConditionTrue, ReasonResolved, "", now)
	}
	out.Status.SecurityGroups = sgs
	if len(sgs) == 0 {
		out.SetCondition(awsv1.ConditionTypeSecurityGroupsReady, metav1.ConditionFalse, ReasonSecurityGroupsNotFound,
			"no security group matches spec.securityGroupSelectorTerms "+describeSGTerms(nc.Spec.SecurityGroupSelectorTerms), now)
	} else {
		out.SetCondition(awsv1.ConditionTypeSecurityGroupsReady, metav1.ConditionTrue, ReasonResolved, "", now)
	}
	out.Status.AMIs = amis
	if len(amis) == 0 {
		out.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, ReasonAMINotFound,
			"no image matches spec.amiSelectorTerms "+describeAMITerms(nc.Spec.AMISelectorTerms), now)
	} else {
		out.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionTrue, ReasonResolved, "", now)
	}
	if profileErr != nil {
		out.Status.InstanceProfile = ""
		out.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, ReasonInstanceProfileNotFound, profileErr.Error(), now)
	} else {
		out.Status.InstanceProfile = profile
		out.SetCondition(awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, ReasonResolved, "", now)
	}
	// Capacity reservations (reservations.go): not one of the Ready
	// dependents, so a class with a bad id still launches outside it.
	if err := r.capacityReservationsStatus(ctx, nc, out); err != nil {
		return nil, err
	}
	// The selected placement group (placementgroup.go): one of the Ready
	// dependents while selected.
	if err := r.placementGroupStatus(ctx, nc, out, now); err != nil {
		return nil, err
	}
	errs := nc.RuntimeValidate()
	switch {
	case len(errs) > 0:
		out.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, ReasonValidationFailed, errs.ToAggregate().Error(), now)
	case r.DisableDryRun || len(subnets) == 0 || len(sgs) == 0 || len(amis) == 0 || profileErr != nil:
		// Without resolved launch parameters there is nothing to dry-run;
		// another condition already keeps the class un-Ready.
		out.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValid, "", now)
	default:
		reason, msg, err := r.dryRunValidate(ctx, nc, out, now)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			out.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, reason, msg, now)
		} else {
			out.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValid, "", now)
		}
	}
	r.spotPricesCondition(nc, out, now)
	if fields := UnsupportedFields(&nc.Spec); len(fields) > 0 {
		out.SetCondition(awsv1.ConditionTypeSpecSupported, metav1.ConditionFalse, ReasonNotSupported,
			"dovetail accepts but does not act on "+strings.Join(fields, "; "), now)
	} else {
		out.SetCondition(awsv1.ConditionTypeSpecSupported, metav1.ConditionTrue, ReasonSupported, "", now)
	}
	return out, nil
}

// UnsupportedFields lists, as field paths with the reason, the fields of a
// class spec that dovetail accepts (the peer's manifests apply unchanged)
// but does not act on, and the combinations EC2 refuses at launch.
func UnsupportedFields(spec *awsv1.EC2NodeClassSpec) []string {
	var out []string
	if k := spec.Kubelet; k != nil && len(k.UnknownKeys) > 0 && amiFamily(spec) != awsv1.AMIFamilyAL2023 {
		// Only nodeadm's NodeConfig (AL2023) takes a free-form kubelet
		// configuration; the peer drops these keys on the other families too.
		for _, key := range k.UnknownKeys {
			out = append(out, "spec.kubelet."+key+" (only AL2023 user data passes kubelet keys beyond the typed ones)")
		}
	}
	// The template carries it, but no data dovetail has says which types
	// take it: DescribeInstanceTypes reports it (ProcessorInfo
	// SupportedFeatures "nested-virtualization") but the built-in catalog
	// and the emulator do not, so types are not narrowed to those taking
	// it and a launch may pick one EC2 then refuses. (enclaveOptions,
	// connectionTracking and networkInterfaces narrow the instance types:
	// instancetype.NarrowingFor.)
	if o := spec.CPUOptions; o != nil && o.NestedVirtualization == "enabled" {
		out = append(out, "spec.cpuOptions.nestedVirtualization (in the launch template, but instance types are not narrowed to those supporting nested virtualization: the built-in catalog lacks that fact)")
	}
	if spec.AssociatePublicIPAddress != nil && *spec.AssociatePublicIPAddress {
		withIP := 0
		for _, n := range spec.NetworkInterfaces {
			if n.InterfaceType != awsv1.InterfaceTypeEFAOnly {
				withIP++
			}
		}
		if withIP > 1 {
			out = append(out, fmt.Sprintf("spec.associatePublicIPAddress with spec.networkInterfaces (EC2 refuses a public IP with %d interfaces of type interface; launches fail)", withIP))
		}
	}
	return out
}

// amiFamily is the spec's family, from the field or the alias.
func amiFamily(spec *awsv1.EC2NodeClassSpec) string {
	return (&awsv1.EC2NodeClass{Spec: *spec}).AMIFamily()
}

// spotPricesCondition sets SpotPricesReady from r.SpotPrices and warns
// when it turns False.
func (r *Resolver) spotPricesCondition(in, out *awsv1.EC2NodeClass, now time.Time) {
	if r.SpotPrices == nil {
		return
	}
	fallback, known := r.SpotPrices()
	if !known {
		return
	}
	if fallback == "" {
		out.SetCondition(awsv1.ConditionTypeSpotPricesReady, metav1.ConditionTrue, ReasonSpotPricesLive, "", now)
		return
	}
	wasFalse := false
	if c := in.GetCondition(awsv1.ConditionTypeSpotPricesReady); c != nil && c.Status == metav1.ConditionFalse {
		wasFalse = true
	}
	out.SetCondition(awsv1.ConditionTypeSpotPricesReady, metav1.ConditionFalse, ReasonSpotPricesUnavailable, fallback, now)
	if !wasFalse && r.Recorder != nil {
		r.Recorder.Eventf(out, nil, corev1.EventTypeWarning, ReasonSpotPricesUnavailable, "PriceSpotOfferings", "%s", fallback)
	}
}

func (r *Resolver) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// tagFilters turns selector tags into EC2 filters: "*" matches any value
// (tag-key), anything else the exact value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	var fs []ec2types.Filter
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return fs
}

// Subnets resolves subnet selector terms, sorted by id.
func (r *Resolver) Subnets(ctx context.Context, terms []awsv1.SubnetSelectorTerm) ([]awsv1.Subnet, error) {
	found := map[string]awsv1.Subnet{}
	at := r.now()
	free := map[string]int64{}
	for _, t := range terms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{t.ID}})
		}
		p := ec2.NewDescribeSubnetsPaginator(r.EC2, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets: %w", err)
			}
			for _, s := range page.Subnets {
				id := aws.ToString(s.SubnetId)
				found[id] = awsv1.Subnet{ID: id, Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}
				if s.AvailableIpAddressCount != nil {
					free[id] = int64(*s.AvailableIpAddressCount)
				}
			}
		}
	}
	if r.ObserveSubnets != nil {
		r.ObserveSubnets(at, free)
	}
	out := slices.Collect(maps.Values(found))
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// SecurityGroups resolves security group selector terms, sorted by id.
func (r *Resolver) SecurityGroups(ctx context.Context, terms []awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, error) {
	found := map[string]awsv1.SecurityGroup{}
	for _, t := range terms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(t.Tags)}
		if t.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{t.ID}})
		}
		if t.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{t.Name}})
		}
		p := ec2.NewDescribeSecurityGroupsPaginator(r.EC2, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups: %w", err)
			}
			for _, g := range page.SecurityGroups {
				id := aws.ToString(g.GroupId)
				found[id] = awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)}
			}
		}
	}
	out := slices.Collect(maps.Values(found))
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Image is an image as resolution sees it.
type Image struct {
	ID, Name string
	// Arch is the Kubernetes architecture (amd64, arm64).
	Arch string
	// Created is the image's creation time.
	Created time.Time
}

// Newest picks the newest image of each architecture (creation time, then
// name, then id, the larger winning) and returns them as status entries,
// amd64 first. Images of other architectures are ignored.
func Newest(images []Image) []awsv1.AMI {
	best := map[string]Image{}
	for _, img := range images {
		if img.Arch != karpv1.ArchitectureAmd64 && img.Arch != karpv1.ArchitectureArm64 {
			continue
		}
		cur, ok := best[img.Arch]
		if !ok || newer(img, cur) {
			best[img.Arch] = img
		}
	}
	var out []awsv1.AMI
	for _, arch := range []string{karpv1.ArchitectureAmd64, karpv1.ArchitectureArm64} {
		img, ok := best[arch]
		if !ok {
			continue
		}
		out = append(out, awsv1.AMI{ID: img.ID, Name: img.Name, Requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
		}})
	}
	return out
}

func newer(a, b Image) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	if a.Name != b.Name {
		return a.Name > b.Name
	}
	return a.ID > b.ID
}

// AMIs resolves the class's image selector terms.
func (r *Resolver) AMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	var ids []string
	var queries []*ec2.DescribeImagesInput
	for _, t := range nc.Spec.AMISelectorTerms {
		switch {
		case t.Alias != "":
			names, err := AliasParameters(t.Alias, r.KubernetesVersion)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				id, err := r.parameter(ctx, name)
				if err != nil {
					return nil, err
				}
				if id != "" {
					ids = append(ids, id)
				}
			}
		case t.SSMParameter != "":
			id, err := r.parameter(ctx, t.SSMParameter)
			if err != nil {
				return nil, err
			}
			if id != "" {
				ids = append(ids, id)
			}
		case t.ID != "":
			ids = append(ids, t.ID)
		default:
			in := &ec2.DescribeImagesInput{Filters: tagFilters(t.Tags)}
			if t.Name != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{t.Name}})
			}
			switch {
			case t.Owner != "":
				in.Owners = []string{t.Owner}
			case t.Name != "" && len(t.Tags) == 0:
				in.Owners = []string{"self", "amazon"}
			}
			queries = append(queries, in)
		}
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		// Filter by image-id rather than ImageIds: a missing id then
		// matches nothing instead of failing the whole call.
		queries = append(queries, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: ids}}})
	}
	var images []Image
	for _, in := range queries {
		p := ec2.NewDescribeImagesPaginator(r.EC2, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing images: %w", err)
			}
			for _, img := range page.Images {
				if img.State != "" && img.State != ec2types.ImageStateAvailable {
					continue
				}
				created, _ := time.Parse(time.RFC3339, aws.ToString(img.CreationDate))
				images = append(images, Image{
					ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name),
					Arch: KubernetesArch(string(img.Architecture)), Created: created,
				})
			}
		}
	}
	return Newest(images), nil
}

// KubernetesArch maps an EC2 architecture to Kubernetes' name.
func KubernetesArch(ec2Arch string) string {
	switch ec2Arch {
	case "x86_64":
		return karpv1.ArchitectureAmd64
	case "arm64":
		return karpv1.ArchitectureArm64
	}
	return ec2Arch
}

// parameter reads an SSM parameter; a missing parameter is "".
func (r *Resolver) parameter(ctx context.Context, name string) (string, error) {
	out, err := r.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		var nf *ssmtypes.ParameterNotFound
		if errors.As(err, &nf) {
			return "", nil
		}
		return "", fmt.Errorf("reading SSM parameter %s: %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), nil
}

// AliasParameters returns the SSM parameter names an alias resolves
// through (amd64 first, then arm64) for a Kubernetes version.
func AliasParameters(alias, k8sVersion string) ([]string, error) {
	family, version, ok := strings.Cut(alias, "@")
	if !ok || version == "" {
		return nil, fmt.Errorf("spec.amiSelectorTerms: alias %q must have the form family@version", alias)
	}
	latest := version == "latest"
	switch strings.ToLower(family) {
	case "al2023":
		var out []string
		for _, arch := range []string{"x86_64", "arm64"} {
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/", k8sVersion, arch)
			if latest {
				out = append(out, base+"recommended/image_id")
			} else {
				out = append(out, fmt.Sprintf("%samazon-eks-node-al2023-%s-standard-%s-%s/image_id", base, arch, k8sVersion, version))
			}
		}
		return out, nil
	case "al2":
		if latest {
			return []string{
				fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2/recommended/image_id", k8sVersion),
				fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2-arm64/recommended/image_id", k8sVersion),
			}, nil
		}
		return []string{
			fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2/amazon-eks-node-%s-%s/image_id", k8sVersion, k8sVersion, version),
			fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2-arm64/amazon-eks-arm64-node-%s-%s/image_id", k8sVersion, k8sVersion, version),
		}, nil
	case "bottlerocket":
		v := strings.TrimPrefix(version, "v")
		var out []string
		for _, arch := range []string{"x86_64", "arm64"} {
			out = append(out, fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/%s/image_id", k8sVersion, arch, v))
		}
		return out, nil
	}
	return nil, fmt.Errorf("spec.amiSelectorTerms: alias family %q is not supported (al2, al2023, bottlerocket)", family)
}

// ErrInstanceProfileNotFound is wrapped when the class's instance profile
// (or the role for one) does not exist.
var ErrInstanceProfileNotFound = errors.New("instance profile not found")

// InstanceProfileName is the name of the profile dovetail manages for a
// class with spec.role: the cluster name and a hash of the region and
// class name (at most 117 characters; IAM allows 128).
func InstanceProfileName(cluster, region, nodeClass string) string {
	h := fnv.New64a()
	h.Write([]byte(region + "/" + nodeClass))
	if len(cluster) > 100 {
		cluster = cluster[:100]
	}
	return fmt.Sprintf("%s_%016x", cluster, h.Sum64())
}

// InstanceProfilePath is the IAM path of profiles dovetail creates.
const InstanceProfilePath = "/dovetail/"

// InstanceProfile returns the name of the class's instance profile,
// creating or repairing it for spec.role.
func (r *Resolver) InstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil && *nc.Spec.InstanceProfile != "" {
		name := *nc.Spec.InstanceProfile
		if _, err := r.getProfile(ctx, name); err != nil {
			return "", err
		}
		return name, nil
	}
	role := nc.Spec.Role
	if role == "" {
		return "", fmt.Errorf("%w: spec.role and spec.instanceProfile are both empty", ErrInstanceProfileNotFound)
	}
	name := InstanceProfileName(r.ClusterName, r.Region, nc.Name)
	tags := map[string]string{
		TagClusterPrefix + r.ClusterName: "owned",
		awsv1.TagEKSClusterName:          r.ClusterName,
		TagRegion:                        r.Region,
		awsv1.TagNodeClass:               nc.Name,
	}
	profile, err := r.getProfile(ctx, name)
	switch {
	case errors.Is(err, ErrInstanceProfileNotFound):
		var iamTags []iamtypes.Tag
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			iamTags = append(iamTags, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
		}
		created, err := r.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name), Path: aws.String(InstanceProfilePath), Tags: iamTags,
		})
		if err != nil {
			var exists *iamtypes.EntityAlreadyExistsException
			if !errors.As(err, &exists) {
				return "", fmt.Errorf("creating instance profile %s: %w", name, err)
			}
			if profile, err = r.getProfile(ctx, name); err != nil {
				return "", err
			}
		} else {
			profile = created.InstanceProfile
		}
	case err != nil:
		return "", err
	default:
		var missing []iamtypes.Tag
		have := map[string]string{}
		for _, t := range profile.Tags {
			have[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			if have[k] != tags[k] {
				missing = append(missing, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
			}
		}
		if len(missing) > 0 {
			if _, err := r.IAM.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: missing}); err != nil {
				return "", fmt.Errorf("tagging instance profile %s: %w", name, err)
			}
		}
	}
	hasRole := false
	for _, ro := range profile.Roles {
		if aws.ToString(ro.RoleName) == role {
			hasRole = true
			continue
		}
		if _, err := r.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: ro.RoleName,
		}); err != nil {
			return "", fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(ro.RoleName), name, err)
		}
	}
	if !hasRole {
		if _, err := r.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: aws.String(role),
		}); err != nil {
			var nse *iamtypes.NoSuchEntityException
			if errors.As(err, &nse) {
				return "", fmt.Errorf("%w: role %q (spec.role) does not exist", ErrInstanceProfileNotFound, role)
			}
			return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
		}
	}
	return name, nil
}

func (r *Resolver) getProfile(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	out, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		var nse *iamtypes.NoSuchEntityException
		if errors.As(err, &nse) {
			return nil, fmt.Errorf("%w: %s", ErrInstanceProfileNotFound, name)
		}
		return nil, fmt.Errorf("reading instance profile %s: %w", name, err)
	}
	return out.InstanceProfile, nil
}

func describeTags(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+"="+tags[k])
	}
	return "tags " + strings.Join(parts, ",")
}

func describeSubnetTerms(terms []awsv1.SubnetSelectorTerm) string {
	var parts []string
	for _, t := range terms {
		var fs []string
		if len(t.Tags) > 0 {
			fs = append(fs, describeTags(t.Tags))
		}
		if t.ID != "" {
			fs = append(fs, "id "+t.ID)
		}
		parts = append(parts, "{"+strings.Join(fs, ", ")+"}")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func describeSGTerms(terms []awsv1.SecurityGroupSelectorTerm) string {
	var parts []string
	for _, t := range terms {
		var fs []string
		if len(t.Tags) > 0 {
			fs = append(fs, describeTags(t.Tags))
		}
		if t.ID != "" {
			fs = append(fs, "id "+t.ID)
		}
		if t.Name != "" {
			fs = append(fs, "name "+t.Name)
		}
		parts = append(parts, "{"+strings.Join(fs, ", ")+"}")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func describeAMITerms(terms []awsv1.AMISelectorTerm) string {
	var parts []string
	for _, t := range terms {
		var fs []string
		if t.Alias != "" {
			fs = append(fs, "alias "+t.Alias)
		}
		if len(t.Tags) > 0 {
			fs = append(fs, describeTags(t.Tags))
		}
		if t.ID != "" {
			fs = append(fs, "id "+t.ID)
		}
		if t.Name != "" {
			fs = append(fs, "name "+t.Name)
		}
		if t.Owner != "" {
			fs = append(fs, "owner "+t.Owner)
		}
		if t.SSMParameter != "" {
			fs = append(fs, "ssmParameter "+t.SSMParameter)
		}
		parts = append(parts, "{"+strings.Join(fs, ", ")+"}")
	}
	return "[" + strings.Join(parts, " ") + "]"
}
