package launchtemplate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// BlockDevice is one volume of a template, sizes in GiB.
type BlockDevice struct {
	DeviceName          string `json:"deviceName"`
	VolumeSizeGiB       int32  `json:"volumeSizeGiB,omitempty"`
	VolumeType          string `json:"volumeType,omitempty"`
	IOPS                int32  `json:"iops,omitempty"`
	Throughput          int32  `json:"throughput,omitempty"`
	Encrypted           *bool  `json:"encrypted,omitempty"`
	DeleteOnTermination *bool  `json:"deleteOnTermination,omitempty"`
	KMSKeyID            string `json:"kmsKeyID,omitempty"`
	SnapshotID          string `json:"snapshotID,omitempty"`
}

// Content is everything a template holds. Two equal Contents are one
// template.
type Content struct {
	ImageID string `json:"imageID"`
	// UserData is the plain-text user data (base64-encoded on the wire).
	UserData         string   `json:"userData,omitempty"`
	SecurityGroupIDs []string `json:"securityGroupIDs"`
	InstanceProfile  string   `json:"instanceProfile,omitempty"`
	// MetadataOptions must be complete (see nodeclass.EffectiveMetadataOptions).
	HTTPEndpoint            string        `json:"httpEndpoint"`
	HTTPProtocolIPv6        string        `json:"httpProtocolIPv6"`
	HTTPPutResponseHopLimit int64         `json:"httpPutResponseHopLimit"`
	HTTPTokens              string        `json:"httpTokens"`
	BlockDevices            []BlockDevice `json:"blockDevices,omitempty"`
	DetailedMonitoring      bool          `json:"detailedMonitoring,omitempty"`
	AssociatePublicIP       *bool         `json:"associatePublicIP,omitempty"`
	// Tags are put on the template itself.
	Tags map[string]string `json:"tags,omitempty"`
	// CapacityReservationPreference and CapacityReservationID are the
	// template's CapacityReservationSpecification: a reserved launch's
	// template targets its reservation (capacity-reservations-only); the
	// other launches of a class that selects reservations say none, so
	// that they never take an open reservation's room unplanned.
	CapacityReservationPreference string `json:"capacityReservationPreference,omitempty"`
	CapacityReservationID         string `json:"capacityReservationID,omitempty"`
}

// Hash is a hex digest of the content (security group order ignored).
func (c Content) Hash() string {
	c.SecurityGroupIDs = slices.Sorted(slices.Values(c.SecurityGroupIDs))
	b, err := json.Marshal(c)
	if err != nil {
		panic("launchtemplate: hashing content: " + err.Error()) // plain values only
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Name is the template name for the content in a cluster.
func (c Content) Name(cluster string) string {
	if len(cluster) > 100 {
		cluster = cluster[:100]
	}
	return "dovetail/" + cluster + "/" + c.Hash()
}

// DefaultBlockDevices are the volumes of a family when the node class
// lists none: a 20 GiB encrypted gp3 root volume on AL2023 and AL2;
// Bottlerocket's 4 GiB OS volume and 20 GiB data volume; none for Custom
// (the image's own mappings apply).
func DefaultBlockDevices(family string) []BlockDevice {
	gp3 := func(dev string, gib int32) BlockDevice {
		return BlockDevice{DeviceName: dev, VolumeSizeGiB: gib, VolumeType: "gp3", Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}
	}
	switch family {
	case awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2:
		return []BlockDevice{gp3("/dev/xvda", 20)}
	case awsv1.AMIFamilyBottlerocket:
		return []BlockDevice{gp3("/dev/xvda", 4), gp3("/dev/xvdb", 20)}
	}
	return nil
}

// BlockDevices converts the node class's mappings, or returns the family
// defaults when it has none. Sizes are rounded up to whole GiB.
func BlockDevices(nc *awsv1.EC2NodeClass) []BlockDevice {
	if len(nc.Spec.BlockDeviceMappings) == 0 {
		return DefaultBlockDevices(nc.AMIFamily())
	}
	var out []BlockDevice
	for _, m := range nc.Spec.BlockDeviceMappings {
		if m == nil {
			continue
		}
		bd := BlockDevice{DeviceName: aws.ToString(m.DeviceName)}
		if e := m.EBS; e != nil {
			bd.Encrypted, bd.DeleteOnTermination = e.Encrypted, e.DeleteOnTermination
			bd.KMSKeyID, bd.SnapshotID = aws.ToString(e.KMSKeyID), aws.ToString(e.SnapshotID)
			bd.VolumeType = aws.ToString(e.VolumeType)
			if e.IOPS != nil {
				bd.IOPS = int32(*e.IOPS)
			}
			if e.Throughput != nil {
				bd.Throughput = int32(*e.Throughput)
			}
			if e.VolumeSize != nil {
				bd.VolumeSizeGiB = gib(*e.VolumeSize)
			}
		}
		out = append(out, bd)
	}
	return out
}

func gib(q resource.Quantity) int32 {
	const g = 1 << 30
	b := q.Value()
	return int32((b + g - 1) / g)
}

// Data is the CreateLaunchTemplate request data for the content.
func (c Content) Data() *ec2types.RequestLaunchTemplateData {
	d := &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String(c.ImageID),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(c.HTTPEndpoint),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(c.HTTPProtocolIPv6),
			HttpPutResponseHopLimit: aws.Int32(int32(c.HTTPPutResponseHopLimit)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(c.HTTPTokens),
		},
		Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(c.DetailedMonitoring)},
	}
	if c.UserData != "" {
		d.UserData = aws.String(encodeBase64(c.UserData))
	}
	if c.CapacityReservationPreference != "" || c.CapacityReservationID != "" {
		d.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreference(c.CapacityReservationPreference),
		}
		if c.CapacityReservationID != "" {
			d.CapacityReservationSpecification.CapacityReservationTarget = &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(c.CapacityReservationID)}
		}
	}
	if c.InstanceProfile != "" {
		d.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(c.InstanceProfile)}
	}
	if c.AssociatePublicIP != nil {
		d.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: c.AssociatePublicIP, Groups: c.SecurityGroupIDs,
		}}
	} else {
		d.SecurityGroupIds = c.SecurityGroupIDs
	}
	for _, b := range c.BlockDevices {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(b.DeviceName), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			Encrypted: b.Encrypted, DeleteOnTermination: b.DeleteOnTermination,
		}}
		if b.VolumeSizeGiB > 0 {
			m.Ebs.VolumeSize = aws.Int32(b.VolumeSizeGiB)
		}
		if b.VolumeType != "" {
			m.Ebs.VolumeType = ec2types.VolumeType(b.VolumeType)
		}
		if b.IOPS > 0 {
			m.Ebs.Iops = aws.Int32(b.IOPS)
		}
		if b.Throughput > 0 {
			m.Ebs.Throughput = aws.Int32(b.Throughput)
		}
		if b.KMSKeyID != "" {
			m.Ebs.KmsKeyId = aws.String(b.KMSKeyID)
		}
		if b.SnapshotID != "" {
			m.Ebs.SnapshotId = aws.String(b.SnapshotID)
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, m)
	}
	return d
}

// Template is an existing launch template.
type Template struct {
	ID, Name string
}

// Provider ensures templates exist. It is safe for concurrent use.
type Provider struct {
	ec2     *ec2.Client
	cluster string
	mu      sync.Mutex
	known   map[string]Template // by name
	inherit map[string]*sync.Mutex
}

// NewProvider returns a provider for the cluster's templates.
func NewProvider(client *ec2.Client, cluster string) *Provider {
	return &Provider{ec2: client, cluster: cluster, known: map[string]Template{}, inherit: map[string]*sync.Mutex{}}
}

// Ensure returns the template for the content, creating it if no template
// of that name exists yet.
func (p *Provider) Ensure(ctx context.Context, c Content) (Template, error) {
	name := c.Name(p.cluster)
	p.mu.Lock()
	if t, ok := p.known[name]; ok {
		p.mu.Unlock()
		return t, nil
	}
	lock := p.inherit[name]
	if lock == nil {
		lock = &sync.Mutex{}
		p.inherit[name] = lock
	}
	p.mu.Unlock()
	// One creator per name at a time; the others wait and reuse.
	lock.Lock()
	defer lock.Unlock()
	p.mu.Lock()
	t, ok := p.known[name]
	p.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := p.ensure(ctx, name, c)
	if err != nil {
		return Template{}, err
	}
	p.mu.Lock()
	p.known[name] = t
	p.mu.Unlock()
	return t, nil
}

func (p *Provider) ensure(ctx context.Context, name string, c Content) (Template, error) {
	if t, ok, err := p.describe(ctx, name); err != nil || ok {
		return t, err
	}
	in := &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: c.Data()}
	if len(c.Tags) > 0 {
		spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeLaunchTemplate}
		for _, k := range slices.Sorted(maps.Keys(c.Tags)) {
			spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(c.Tags[k])})
		}
		in.TagSpecifications = []ec2types.TagSpecification{spec}
	}
	out, err := p.ec2.CreateLaunchTemplate(ctx, in)
	if err != nil {
		if apiCode(err) == "InvalidLaunchTemplateName.AlreadyExistsException" {
			if t, ok, derr := p.describe(ctx, name); derr == nil && ok {
				return t, nil
			}
		}
		return Template{}, fmt.Errorf("creating launch template %s: %w", name, err)
	}
	return Template{ID: aws.ToString(out.LaunchTemplate.LaunchTemplateId), Name: name}, nil
}

func (p *Provider) describe(ctx context.Context, name string) (Template, bool, error) {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err != nil {
		if apiCode(err) == "InvalidLaunchTemplateName.NotFoundException" {
			return Template{}, false, nil
		}
		return Template{}, false, fmt.Errorf("describing launch template %s: %w", name, err)
	}
	if len(out.LaunchTemplates) == 0 {
		return Template{}, false, nil
	}
	return Template{ID: aws.ToString(out.LaunchTemplates[0].LaunchTemplateId), Name: name}, true, nil
}

// Forget drops a name from the cache (after the template was deleted).
func (p *Provider) Forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.known, name)
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
