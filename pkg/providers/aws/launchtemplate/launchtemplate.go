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
	// VolumeInitializationRate is the MiB/s at which a volume made from
	// SnapshotID is initialized (spec...ebs.volumeInitializationRate).
	VolumeInitializationRate int32 `json:"volumeInitializationRate,omitempty"`
}

// NetworkInterface is one interface of a template's
// spec.networkInterfaces (InterfaceType "interface" or "efa-only").
type NetworkInterface struct {
	NetworkCardIndex int32  `json:"networkCardIndex"`
	DeviceIndex      int32  `json:"deviceIndex"`
	InterfaceType    string `json:"interfaceType"`
}

// ConnectionTracking is the primary interfaces' connection-tracking
// timeouts in seconds (spec.connectionTracking); nil fields are EC2's
// defaults.
type ConnectionTracking struct {
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	UDPStreamTimeout      *int32 `json:"udpStreamTimeout,omitempty"`
	UDPTimeout            *int32 `json:"udpTimeout,omitempty"`
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
	// MarketType is InstanceMarketOptions.MarketType: capacity-block for a
	// launch into a Capacity Block, "" otherwise.
	MarketType string `json:"marketType,omitempty"`
	// NestedVirtualization is spec.cpuOptions.nestedVirtualization
	// ("enabled" or "disabled"; "" leaves CpuOptions out).
	NestedVirtualization string `json:"nestedVirtualization,omitempty"`
	// EnclavesEnabled is spec.enclaveOptions.enabled (nil leaves
	// EnclaveOptions out, which EC2 takes as disabled).
	EnclavesEnabled *bool `json:"enclavesEnabled,omitempty"`
	// NetworkInterfaces are spec.networkInterfaces; empty means one
	// primary interface (device 0) when an interface setting needs one.
	NetworkInterfaces []NetworkInterface `json:"networkInterfaces,omitempty"`
	// IPv4PrefixCount is spec.ipPrefixCount, put on every interface that
	// is not efa-only.
	IPv4PrefixCount *int32 `json:"ipv4PrefixCount,omitempty"`
	// ConnectionTracking is spec.connectionTracking, put on every
	// interface that is not efa-only.
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
	// PlacementGroupName and PlacementGroupID are
	// spec.placementGroupSelector (name or id): the template's
	// Placement.GroupName or Placement.GroupId.
	PlacementGroupName string `json:"placementGroupName,omitempty"`
	PlacementGroupID   string `json:"placementGroupID,omitempty"`
}

// ApplyNodeClass sets the content's fields that come straight from the
// class's spec: cpuOptions, enclaveOptions, networkInterfaces,
// ipPrefixCount, connectionTracking and placementGroupSelector. (Block devices, with their
// volumeInitializationRate, come from BlockDevices.)
func (c *Content) ApplyNodeClass(nc *awsv1.EC2NodeClass) {
	s := &nc.Spec
	if o := s.CPUOptions; o != nil {
		c.NestedVirtualization = o.NestedVirtualization
	}
	if o := s.EnclaveOptions; o != nil && o.Enabled != nil {
		c.EnclavesEnabled = aws.Bool(*o.Enabled)
	}
	c.NetworkInterfaces = nil
	for _, n := range s.NetworkInterfaces {
		c.NetworkInterfaces = append(c.NetworkInterfaces, NetworkInterface{NetworkCardIndex: n.NetworkCardIndex, DeviceIndex: n.DeviceIndex, InterfaceType: n.InterfaceType})
	}
	if s.IPPrefixCount != nil {
		c.IPv4PrefixCount = aws.Int32(*s.IPPrefixCount)
	}
	if ct := s.ConnectionTracking; ct != nil && (ct.TCPEstablishedTimeout != nil || ct.UDPStreamTimeout != nil || ct.UDPTimeout != nil) {
		c.ConnectionTracking = &ConnectionTracking{TCPEstablishedTimeout: ct.TCPEstablishedTimeout, UDPStreamTimeout: ct.UDPStreamTimeout, UDPTimeout: ct.UDPTimeout}
	}
	c.PlacementGroupName, c.PlacementGroupID = "", ""
	if pg := s.PlacementGroupSelector; pg != nil {
		c.PlacementGroupName, c.PlacementGroupID = pg.Name, pg.ID
	}
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
			if e.VolumeInitializationRate != nil {
				bd.VolumeInitializationRate = *e.VolumeInitializationRate
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
	if c.MarketType != "" {
		d.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketType(c.MarketType)}
	}
	if c.InstanceProfile != "" {
		d.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(c.InstanceProfile)}
	}
	if c.NestedVirtualization != "" {
		d.CpuOptions = &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(c.NestedVirtualization)}
	}
	if c.PlacementGroupName != "" || c.PlacementGroupID != "" {
		d.Placement = &ec2types.LaunchTemplatePlacementRequest{}
		if c.PlacementGroupName != "" {
			d.Placement.GroupName = aws.String(c.PlacementGroupName)
		}
		if c.PlacementGroupID != "" {
			d.Placement.GroupId = aws.String(c.PlacementGroupID)
		}
	}
	if c.EnclavesEnabled != nil {
		d.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(*c.EnclavesEnabled)}
	}
	if nis := c.networkInterfaces(); nis != nil {
		// The interfaces carry the security groups; EC2 refuses both.
		d.NetworkInterfaces = nis
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
		if b.VolumeInitializationRate > 0 {
			m.Ebs.VolumeInitializationRate = aws.Int32(b.VolumeInitializationRate)
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, m)
	}
	return d
}

// networkInterfaces are the template's interfaces, as the peer builds
// them: with spec.networkInterfaces, one per entry, each with the class's
// security groups, and on those that are not efa-only the public-IP
// setting, the IPv4 prefix count and the connection tracking (EC2 refuses
// these on an EFA-only interface); without, one primary interface
// (device 0) when any of those settings is made, else none (the security
// groups then go in SecurityGroupIds).
func (c Content) networkInterfaces() []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	var ct *ec2types.ConnectionTrackingSpecificationRequest
	if t := c.ConnectionTracking; t != nil {
		ct = &ec2types.ConnectionTrackingSpecificationRequest{TcpEstablishedTimeout: t.TCPEstablishedTimeout, UdpStreamTimeout: t.UDPStreamTimeout, UdpTimeout: t.UDPTimeout}
	}
	if len(c.NetworkInterfaces) == 0 {
		if c.AssociatePublicIP == nil && c.IPv4PrefixCount == nil && ct == nil {
			return nil
		}
		return []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: c.AssociatePublicIP, Groups: c.SecurityGroupIDs,
			Ipv4PrefixCount: c.IPv4PrefixCount, ConnectionTrackingSpecification: ct,
		}}
	}
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, 0, len(c.NetworkInterfaces))
	for _, n := range c.NetworkInterfaces {
		r := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(n.NetworkCardIndex), DeviceIndex: aws.Int32(n.DeviceIndex),
			InterfaceType: aws.String(n.InterfaceType), Groups: c.SecurityGroupIDs,
		}
		if n.InterfaceType != awsv1.InterfaceTypeEFAOnly {
			r.AssociatePublicIpAddress, r.Ipv4PrefixCount, r.ConnectionTrackingSpecification = c.AssociatePublicIP, c.IPv4PrefixCount, ct
		}
		out = append(out, r)
	}
	return out
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
