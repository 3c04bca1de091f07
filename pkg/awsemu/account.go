package awsemu

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Instance states as EC2 names them, with their numeric codes.
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
	StateStopping     = "stopping"
	StateStopped      = "stopped"
)

func stateCode(s string) int {
	switch s {
	case StatePending:
		return 0
	case StateRunning:
		return 16
	case StateShuttingDown:
		return 32
	case StateTerminated:
		return 48
	case StateStopping:
		return 64
	case StateStopped:
		return 80
	}
	return 0
}

// Instance is a snapshot of one emulated EC2 instance.
type Instance struct {
	ID           string `json:"id"`
	InstanceType string `json:"instanceType"`
	// Architecture is the image's EC2 architecture (x86_64, arm64).
	Architecture string `json:"architecture"`
	Zone         string `json:"zone"`
	ZoneID       string `json:"zoneId"`
	SubnetID     string `json:"subnetId"`
	VPCID        string `json:"vpcId"`
	ImageID      string `json:"imageId"`
	// CapacityType is "spot", "on-demand" or "capacity-block".
	CapacityType string `json:"capacityType"`
	// Price is the hourly price the instance was launched at.
	Price          float64   `json:"price"`
	State          string    `json:"state"`
	PrivateIP      string    `json:"privateIp"`
	PrivateDNSName string    `json:"privateDnsName"`
	LaunchTime     time.Time `json:"launchTime"`
	// StateChangeTime is when State was entered.
	StateChangeTime time.Time         `json:"stateChangeTime"`
	Tags            map[string]string `json:"tags,omitempty"`
	// UserData is the launch template's user data, base64-decoded.
	UserData           string          `json:"userData,omitempty"`
	SecurityGroupIDs   []string        `json:"securityGroupIds,omitempty"`
	MetadataOptions    MetadataOptions `json:"metadataOptions"`
	BlockDevices       []BlockDevice   `json:"blockDevices,omitempty"`
	InstanceProfileARN string          `json:"instanceProfileArn,omitempty"`
	LaunchTemplateID   string          `json:"launchTemplateId,omitempty"`
	LaunchTemplateName string          `json:"launchTemplateName,omitempty"`
	FleetID            string          `json:"fleetId,omitempty"`
	ReservationID      string          `json:"reservationId"`
	SpotRequestID      string          `json:"spotRequestId,omitempty"`
	// CapacityReservationID is the capacity reservation the instance was
	// launched into, if any.
	CapacityReservationID string `json:"capacityReservationId,omitempty"`
	// PlacementGroupName and PlacementGroupID name the placement group the
	// launch template put the instance in; PartitionNumber is its
	// partition (partition strategy only, 0 otherwise).
	PlacementGroupName string `json:"placementGroupName,omitempty"`
	PlacementGroupID   string `json:"placementGroupId,omitempty"`
	PartitionNumber    int    `json:"partitionNumber,omitempty"`
	// StateReason explains the last transition (e.g. a spot interruption).
	StateReason string `json:"stateReason,omitempty"`
	// ScheduledEvents are the events EC2 scheduled for the instance
	// (ScheduleEvent); SystemImpaired and InstanceImpaired fail its status
	// checks (SetStatusCheck).
	ScheduledEvents  []ScheduledEvent `json:"scheduledEvents,omitempty"`
	SystemImpaired   bool             `json:"systemImpaired,omitempty"`
	InstanceImpaired bool             `json:"instanceImpaired,omitempty"`
	// Reboots counts the reboots (RebootInstances) completed; the node
	// agent's boot ID changes with each (BootID).
	Reboots int `json:"reboots,omitempty"`
	// RebootingUntil is when the reboot in progress ends (zero when
	// none): until then the status checks read "initializing".
	RebootingUntil time.Time `json:"rebootingUntil,omitempty"`
	// NodeFault is the unhealthy condition the instance's node reports
	// (SetNodeFault), nil when healthy.
	NodeFault *NodeFault `json:"nodeFault,omitempty"`
}

// MetadataOptions are an instance's IMDS settings.
type MetadataOptions struct {
	HTTPEndpoint            string `json:"httpEndpoint"`
	HTTPProtocolIPv6        string `json:"httpProtocolIpv6"`
	HTTPPutResponseHopLimit int64  `json:"httpPutResponseHopLimit"`
	HTTPTokens              string `json:"httpTokens"`
	InstanceMetadataTags    string `json:"instanceMetadataTags"`
}

// BlockDevice is one block-device mapping of a launch template or image.
type BlockDevice struct {
	DeviceName          string `json:"deviceName"`
	VolumeSizeGiB       int64  `json:"volumeSizeGiB,omitempty"`
	VolumeType          string `json:"volumeType,omitempty"`
	IOPS                int64  `json:"iops,omitempty"`
	Throughput          int64  `json:"throughput,omitempty"`
	Encrypted           *bool  `json:"encrypted,omitempty"`
	DeleteOnTermination *bool  `json:"deleteOnTermination,omitempty"`
	KMSKeyID            string `json:"kmsKeyId,omitempty"`
	SnapshotID          string `json:"snapshotId,omitempty"`
	// VolumeInitializationRate is MiB/s, 0 when not set (launch templates
	// only).
	VolumeInitializationRate int64 `json:"volumeInitializationRate,omitempty"`
}

func (in *Instance) clone() Instance {
	c := *in
	c.Tags = cloneTags(in.Tags)
	c.SecurityGroupIDs = append([]string(nil), in.SecurityGroupIDs...)
	c.BlockDevices = append([]BlockDevice(nil), in.BlockDevices...)
	c.ScheduledEvents = append([]ScheduledEvent(nil), in.ScheduledEvents...)
	if in.NodeFault != nil {
		f := *in.NodeFault
		c.NodeFault = &f
	}
	return c
}

func cloneTags(t map[string]string) map[string]string {
	if t == nil {
		return nil
	}
	c := make(map[string]string, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type vpcRec struct {
	ID   string
	CIDR string
	Tags map[string]string
}

type subnetRec struct {
	ID     string
	Zone   Zone
	CIDR   string
	base   uint32 // first address of the CIDR
	size   uint32 // number of addresses
	next   uint32 // where the search for a free host offset starts
	used   map[uint32]bool
	Tags   map[string]string
	VPCID  string
	Public bool
}

type securityGroupRec struct {
	ID          string
	Name        string
	Description string
	VPCID       string
	Tags        map[string]string
}

type imageRec struct {
	ID           string
	Name         string
	Description  string
	Architecture string // x86_64, arm64
	OwnerID      string
	OwnerAlias   string
	CreationDate time.Time
	Tags         map[string]string
	Family       string // al2023, al2, bottlerocket
	Variant      string // standard, nvidia, neuron
	Version      string // v20251101, or 1.50.0 for Bottlerocket
	RootDevices  []BlockDevice
}

type launchTemplateRec struct {
	ID         string
	Name       string
	CreateTime time.Time
	Tags       map[string]string
	Data       ltData
}

type ltNetworkInterface struct {
	DeviceIndex              int64
	NetworkCardIndex         *int64
	InterfaceType            string
	AssociatePublicIPAddress *bool
	Groups                   []string
	SubnetID                 string
	Ipv4PrefixCount          *int64
	ConnTrack                *ltConnTrack
}

// ltConnTrack is an interface's ConnectionTrackingSpecification, seconds.
type ltConnTrack struct {
	TCPEstablished, UDPStream, UDP *int64
}

type ltData struct {
	ImageID            string
	InstanceType       string
	UserData           string // base64, as sent
	SecurityGroupIDs   []string
	SecurityGroupNames []string
	MetadataOptions    *MetadataOptions
	BlockDevices       []BlockDevice
	ProfileName        string
	ProfileARN         string
	NetworkInterfaces  []ltNetworkInterface
	TagSpecs           map[string]map[string]string // resource type -> tags
	Monitoring         bool
	// ReservationPreference and ReservationID are the
	// CapacityReservationSpecification (reservations.go).
	ReservationPreference string
	ReservationID         string
	// MarketType is InstanceMarketOptions.MarketType (spot or
	// capacity-block; RunInstances' default market when the request names
	// none).
	MarketType string
	// NestedVirtualization is CpuOptions.NestedVirtualization (CoreCount
	// and ThreadsPerCore when set); EnclavesEnabled is
	// EnclaveOptions.Enabled; nil/"" when not sent.
	NestedVirtualization      string
	CoreCount, ThreadsPerCore *int64
	EnclavesEnabled           *bool
	PlacementGroupName        string
	PlacementGroupID          string
	PlacementPartitionNumber  *int64
}

type instanceRec struct {
	Instance
	reservationOwner string
}

type fleetRec struct {
	ID   string
	Tags map[string]string
}

type roleRec struct {
	Name       string
	ID         string
	ARN        string
	CreateDate time.Time
	Path       string
}

type instanceProfileRec struct {
	Name       string
	ID         string
	ARN        string
	Path       string
	CreateDate time.Time
	Roles      []string
	Tags       map[string]string
}

type ssmParam struct {
	Name         string
	Value        string
	Version      int64
	LastModified time.Time
	DataType     string
}

// account is the state of the one emulated AWS account. Guarded by
// Emulator.mu.
type account struct {
	vpc             vpcRec
	subnets         []*subnetRec
	securityGroups  []*securityGroupRec
	images          []*imageRec
	launchTemplates map[string]*launchTemplateRec // by id
	ltByName        map[string]*launchTemplateRec
	instances       map[string]*instanceRec
	order           []string // instance ids in launch order (may hold removed ids)
	fleets          map[string]*fleetRec
	tokens          map[string]tokenRec // by action and client token (see idempotent)
	roles           map[string]*roleRec
	profiles        map[string]*instanceProfileRec
	ssm             map[string]*ssmParam
	queues          map[string]*queue
	reservations    []*CapacityReservation   // in creation order
	blockOfferings  []*capacityBlockOffering // described, in order (capacityblocks.go)
	placementGroups []*PlacementGroup        // in creation order
	created         time.Time
}

// Image families and architectures of the seeded AMIs.
var (
	al2023Versions       = []string{"v20250901", "v20251001", "v20251101"}
	bottlerocketVersions = []string{"1.48.0", "1.49.0", "1.50.0"}
	imageDates           = []time.Time{
		time.Date(2025, 9, 1, 6, 0, 0, 0, time.UTC),
		time.Date(2025, 10, 1, 6, 0, 0, 0, time.UTC),
		time.Date(2025, 11, 1, 6, 0, 0, 0, time.UTC),
	}
)

// Amazon's EKS AMI owner account and Bottlerocket's.
const (
	amazonEKSOwner    = "602401143452"
	bottlerocketOwner = "092701018921"
)

func newAccount(e *Emulator) *account {
	o := e.opts
	now := e.clock.Now()
	a := &account{
		launchTemplates: map[string]*launchTemplateRec{},
		ltByName:        map[string]*launchTemplateRec{},
		instances:       map[string]*instanceRec{},
		fleets:          map[string]*fleetRec{},
		tokens:          map[string]tokenRec{},
		roles:           map[string]*roleRec{},
		profiles:        map[string]*instanceProfileRec{},
		ssm:             map[string]*ssmParam{},
		queues:          map[string]*queue{},
		created:         now,
	}
	cluster := o.ClusterName
	discovery := func(name string) map[string]string {
		return map[string]string{
			"karpenter.sh/discovery":           cluster,
			"kubernetes.io/cluster/" + cluster: "owned",
			"Name":                             name,
		}
	}
	a.vpc = vpcRec{ID: e.newID("vpc"), CIDR: "10.0.0.0/16", Tags: discovery(cluster + "-vpc")}
	zones := e.catalog.Zones(o.Region)[:o.Zones] // Start checked o.Zones against the region
	bits := subnetBits(len(zones))
	for i, z := range zones {
		// Up to 3 zones: 10.0.0.0/18, 10.0.64.0/18, 10.0.128.0/18, 16k
		// addresses each; more: 10.0.0.0/19, 10.0.32.0/19, ..., 8k each.
		size := uint32(1) << (32 - bits)
		base := uint32(10)<<24 | uint32(i)*size
		a.subnets = append(a.subnets, &subnetRec{
			ID:    e.newID("subnet"),
			Zone:  z,
			CIDR:  fmt.Sprintf("%d.%d.%d.%d/%d", base>>24, (base>>16)&0xff, (base>>8)&0xff, base&0xff, bits),
			base:  base,
			size:  size,
			next:  4 + uint32(e.rng.Uint64()%4096), // seeded, so emulators with different seeds hand out different addresses
			Tags:  discovery(fmt.Sprintf("%s-private-%s", cluster, z.Name)),
			VPCID: a.vpc.ID,
		})
	}
	a.securityGroups = append(a.securityGroups, &securityGroupRec{
		ID: e.newID("sg"), Name: "default", Description: "default VPC security group", VPCID: a.vpc.ID,
		Tags: map[string]string{},
	}, &securityGroupRec{
		ID: e.newID("sg"), Name: cluster + "-node", Description: "EKS node security group for " + cluster,
		VPCID: a.vpc.ID, Tags: discovery(cluster + "-node"),
	})
	a.seedImages(e)
	role := "KarpenterNodeRole-" + cluster
	a.roles[role] = &roleRec{
		Name: role, ID: "AROA" + strings.ToUpper(fmt.Sprintf("%016x", e.rng.Uint64())), Path: "/",
		ARN: fmt.Sprintf("arn:aws:iam::%s:role/%s", o.AccountID, role), CreateDate: now,
	}
	a.queues[cluster] = newQueue(cluster, fmt.Sprintf("%s/%s/%s", e.endpoint, o.AccountID, cluster), now)
	return a
}

// zoneCount checks Options.Zones n against a region with have zones and
// returns the count to seed: DefaultZones (or have, when fewer) for 0.
func zoneCount(n int, region string, have int) (int, error) {
	if n == 0 {
		return min(DefaultZones, have), nil
	}
	if n < 1 || n > have || subnetBits(n) > maxSubnetBits {
		return 0, fmt.Errorf("awsemu: options: Zones %d is out of range: region %s has %d zones, so Zones must be 1 to %d (0 means %d, or every zone of a region with fewer)",
			n, region, have, min(have, 1<<(maxSubnetBits-16)), DefaultZones)
	}
	return n, nil
}

// maxSubnetBits is the longest prefix a seeded subnet gets (/24: 256
// addresses, 256 zones), far beyond any region.
const maxSubnetBits = 24

// subnetBits is the prefix length of the seeded subnets of n zones in the
// VPC's /16: /18 for up to 3 (the addresses the emulator always had), else
// the shortest prefix from /19 on that fits n of them (/19 up to 8 zones,
// /20 up to 16), leaving the rest of the /16 to AddSubnet.
func subnetBits(n int) int {
	if n <= DefaultZones {
		return 18
	}
	bits := 19
	for 1<<(bits-16) < n {
		bits++
	}
	return bits
}

func (a *account) seedImages(e *Emulator) {
	k := e.opts.KubernetesVersion
	cluster := e.opts.ClusterName
	add := func(img *imageRec) {
		img.ID = fmt.Sprintf("ami-0%016x", e.rng.Uint64())
		a.images = append(a.images, img)
	}
	ssm := func(name, value string, when time.Time) {
		a.ssm[name] = &ssmParam{Name: name, Value: value, Version: 1, LastModified: when, DataType: "aws:ec2:image"}
	}
	rootAL := []BlockDevice{{DeviceName: "/dev/xvda", VolumeSizeGiB: 20, VolumeType: "gp3", DeleteOnTermination: ptrTo(true)}}
	for i, ver := range al2023Versions {
		for _, v := range []struct{ arch, variant string }{
			{"x86_64", "standard"}, {"arm64", "standard"}, {"x86_64", "nvidia"}, {"arm64", "nvidia"}, {"x86_64", "neuron"},
		} {
			name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.variant, k, ver)
			img := &imageRec{
				Name: name, Architecture: v.arch, OwnerID: amazonEKSOwner, OwnerAlias: "amazon",
				Description:  fmt.Sprintf("EKS-optimized Kubernetes node based on Amazon Linux 2023, (k8s: %s, variant: %s)", k, v.variant),
				CreationDate: imageDates[i], Family: "al2023", Variant: v.variant, Version: ver, RootDevices: rootAL,
				Tags: map[string]string{},
			}
			if v.variant == "standard" {
				img.Tags["role"] = cluster
			}
			add(img)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/", k, v.arch, v.variant)
			ssm(base+name+"/image_id", img.ID, img.CreationDate)
			ssm(base+"recommended/image_id", img.ID, img.CreationDate) // the last version wins
		}
		for _, v := range []struct{ arch, dir, infix string }{
			{"x86_64", "amazon-linux-2", ""}, {"arm64", "amazon-linux-2-arm64", "arm64-"}, {"x86_64", "amazon-linux-2-gpu", "gpu-"},
		} {
			name := fmt.Sprintf("amazon-eks-%snode-%s-%s", v.infix, k, ver)
			variant := "standard"
			if v.infix == "gpu-" {
				variant = "nvidia"
			}
			img := &imageRec{
				Name: name, Architecture: v.arch, OwnerID: amazonEKSOwner, OwnerAlias: "amazon",
				Description:  fmt.Sprintf("EKS Kubernetes Worker AMI with AmazonLinux2 image, (k8s: %s)", k),
				CreationDate: imageDates[i], Family: "al2", Variant: variant, Version: ver, RootDevices: rootAL,
				Tags: map[string]string{},
			}
			add(img)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/", k, v.dir)
			ssm(base+name+"/image_id", img.ID, img.CreationDate)
			ssm(base+"recommended/image_id", img.ID, img.CreationDate)
		}
	}
	rootBR := []BlockDevice{
		{DeviceName: "/dev/xvda", VolumeSizeGiB: 4, VolumeType: "gp3", DeleteOnTermination: ptrTo(true)},
		{DeviceName: "/dev/xvdb", VolumeSizeGiB: 20, VolumeType: "gp3", DeleteOnTermination: ptrTo(true)},
	}
	for i, ver := range bottlerocketVersions {
		for _, v := range []struct{ arch, brArch, ssmArch string }{{"x86_64", "x86_64", "x86_64"}, {"arm64", "aarch64", "arm64"}} {
			name := fmt.Sprintf("bottlerocket-aws-k8s-%s-%s-v%s-%08x", k, v.brArch, ver, uint32(e.rng.Uint64()))
			img := &imageRec{
				Name: name, Architecture: v.arch, OwnerID: bottlerocketOwner, OwnerAlias: "amazon",
				Description:  "bottlerocket-aws-k8s-" + k,
				CreationDate: imageDates[i], Family: "bottlerocket", Variant: "standard", Version: ver, RootDevices: rootBR,
				Tags: map[string]string{},
			}
			add(img)
			base := fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/", k, v.ssmArch)
			ssm(base+ver+"/image_id", img.ID, img.CreationDate)
			ssm(base+"latest/image_id", img.ID, img.CreationDate)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func (a *account) subnet(id string) *subnetRec {
	for _, s := range a.subnets {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func (a *account) image(id string) *imageRec {
	for _, img := range a.images {
		if img.ID == id {
			return img
		}
	}
	return nil
}

func (a *account) securityGroup(id string) *securityGroupRec {
	for _, g := range a.securityGroups {
		if g.ID == id {
			return g
		}
	}
	return nil
}

// allocateIP hands out the subnet's next free private address, going round
// the subnet and skipping addresses in use (AWS reuses the addresses of
// instances that are gone). ok is false when the subnet is full.
func (s *subnetRec) allocateIP() (string, bool) {
	const first = 4 // AWS reserves the first four addresses and the last
	usable := s.size - first - 1
	if uint32(len(s.used)) >= usable {
		return "", false
	}
	if s.used == nil {
		s.used = map[uint32]bool{}
	}
	for s.used[s.next] || s.next < first || s.next >= s.size-1 {
		s.next++
		if s.next >= s.size-1 {
			s.next = first
		}
	}
	off := s.next
	s.used[off] = true
	s.next++
	ip := s.base + off
	return fmt.Sprintf("%d.%d.%d.%d", ip>>24, (ip>>16)&0xff, (ip>>8)&0xff, ip&0xff), true
}

// releaseIP returns an address to the subnet.
func (s *subnetRec) releaseIP(ip string) {
	var a, b, c, d uint32
	if _, err := fmt.Sscanf(ip, "%d.%d.%d.%d", &a, &b, &c, &d); err != nil {
		return
	}
	delete(s.used, (a<<24|b<<16|c<<8|d)-s.base)
}

// freeAddresses is the subnet's AvailableIpAddressCount.
func (s *subnetRec) freeAddresses() int64 {
	return int64(s.size) - 5 - int64(len(s.used))
}

// privateDNSName is EC2's private host name for an address.
func privateDNSName(region, ip string) string {
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + region + ".compute.internal"
}
