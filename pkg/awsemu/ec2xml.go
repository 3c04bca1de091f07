package awsemu

// XML shapes of the EC2 query protocol responses. Element names follow the
// EC2 wire format (lowerCamel, lists wrapped in <xxxSet><item>...).

// set is an EC2 list: always rendered (empty lists as <xxxSet/>), items in
// <item> elements.
type set[T any] struct {
	Items []T `xml:"item"`
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func tagSet(tags map[string]string) set[tagXML] {
	s := set[tagXML]{Items: make([]tagXML, 0, len(tags))}
	for _, k := range sortedKeys(tags) {
		s.Items = append(s.Items, tagXML{Key: k, Value: tags[k]})
	}
	return s
}

// optional tag set: omitted when there are no tags, as EC2 does for
// instances without tags.
func optTagSet(tags map[string]string) *set[tagXML] {
	if len(tags) == 0 {
		return nil
	}
	s := tagSet(tags)
	return &s
}

type valueXML struct {
	Value string `xml:",chardata"`
}

// DescribeInstanceTypes

type describeInstanceTypesXML struct {
	InstanceTypeSet set[instanceTypeXML] `xml:"instanceTypeSet"`
	NextToken       string               `xml:"nextToken,omitempty"`
}

type instanceTypeXML struct {
	InstanceType                  string                  `xml:"instanceType"`
	CurrentGeneration             bool                    `xml:"currentGeneration"`
	FreeTierEligible              bool                    `xml:"freeTierEligible"`
	SupportedUsageClasses         set[valueXML]           `xml:"supportedUsageClasses"`
	SupportedRootDeviceTypes      set[valueXML]           `xml:"supportedRootDeviceTypes"`
	SupportedVirtualizationTypes  set[valueXML]           `xml:"supportedVirtualizationTypes"`
	BareMetal                     bool                    `xml:"bareMetal"`
	Hypervisor                    string                  `xml:"hypervisor,omitempty"`
	ProcessorInfo                 processorInfoXML        `xml:"processorInfo"`
	VCPUInfo                      vcpuInfoXML             `xml:"vCpuInfo"`
	MemoryInfo                    memoryInfoXML           `xml:"memoryInfo"`
	InstanceStorageSupported      bool                    `xml:"instanceStorageSupported"`
	InstanceStorageInfo           *instanceStorageInfoXML `xml:"instanceStorageInfo,omitempty"`
	EBSInfo                       ebsInfoXML              `xml:"ebsInfo"`
	NetworkInfo                   networkInfoXML          `xml:"networkInfo"`
	GPUInfo                       *gpuInfoXML             `xml:"gpuInfo,omitempty"`
	NeuronInfo                    *neuronInfoXML          `xml:"neuronInfo,omitempty"`
	InferenceAcceleratorInfo      *inferenceInfoXML       `xml:"inferenceAcceleratorInfo,omitempty"`
	PlacementGroupInfo            placementGroupInfoXML   `xml:"placementGroupInfo"`
	HibernationSupported          bool                    `xml:"hibernationSupported"`
	BurstablePerformanceSupported bool                    `xml:"burstablePerformanceSupported"`
	DedicatedHostsSupported       bool                    `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool                    `xml:"autoRecoverySupported"`
	SupportedBootModes            set[valueXML]           `xml:"supportedBootModes"`
	NitroEnclavesSupport          string                  `xml:"nitroEnclavesSupport,omitempty"`
	NitroTPMSupport               string                  `xml:"nitroTpmSupport,omitempty"`
}

type processorInfoXML struct {
	SupportedArchitectures set[valueXML] `xml:"supportedArchitectures"`
	SustainedClockSpeed    float64       `xml:"sustainedClockSpeedInGhz,omitempty"`
	Manufacturer           string        `xml:"manufacturer,omitempty"`
}

type vcpuInfoXML struct {
	DefaultVCPUs          int32 `xml:"defaultVCpus"`
	DefaultCores          int32 `xml:"defaultCores,omitempty"`
	DefaultThreadsPerCore int32 `xml:"defaultThreadsPerCore,omitempty"`
}

type memoryInfoXML struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type instanceStorageInfoXML struct {
	TotalSizeInGB int64        `xml:"totalSizeInGB"`
	Disks         set[diskXML] `xml:"disks"`
	NVMeSupport   string       `xml:"nvmeSupport,omitempty"`
}

type diskXML struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int32  `xml:"count"`
	Type     string `xml:"type"`
}

type ebsInfoXML struct {
	EBSOptimizedSupport   string `xml:"ebsOptimizedSupport,omitempty"`
	EncryptionSupport     string `xml:"encryptionSupport"`
	NVMeSupport           string `xml:"nvmeSupport,omitempty"`
	MaximumEBSAttachments int32  `xml:"maximumEbsAttachments,omitempty"`
}

type networkInfoXML struct {
	NetworkPerformance        string              `xml:"networkPerformance,omitempty"`
	MaximumNetworkInterfaces  int32               `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards       int32               `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex   int32               `xml:"defaultNetworkCardIndex"`
	NetworkCards              set[networkCardXML] `xml:"networkCards"`
	IPv4AddressesPerInterface int32               `xml:"ipv4AddressesPerInterface"`
	IPv6AddressesPerInterface int32               `xml:"ipv6AddressesPerInterface"`
	IPv6Supported             bool                `xml:"ipv6Supported"`
	ENASupport                string              `xml:"enaSupport,omitempty"`
	EFASupported              bool                `xml:"efaSupported"`
	EFAInfo                   *efaInfoXML         `xml:"efaInfo,omitempty"`
	EncryptionInTransit       bool                `xml:"encryptionInTransitSupported"`
}

type efaInfoXML struct {
	MaximumEFAInterfaces int32 `xml:"maximumEfaInterfaces"`
}

type networkCardXML struct {
	NetworkCardIndex         int32   `xml:"networkCardIndex"`
	NetworkPerformance       string  `xml:"networkPerformance,omitempty"`
	MaximumNetworkInterfaces int32   `xml:"maximumNetworkInterfaces"`
	BaselineBandwidthInGbps  float64 `xml:"baselineBandwidthInGbps,omitempty"`
	PeakBandwidthInGbps      float64 `xml:"peakBandwidthInGbps,omitempty"`
}

type gpuInfoXML struct {
	GPUs                set[gpuDeviceXML] `xml:"gpus"`
	TotalGPUMemoryInMiB int32             `xml:"totalGpuMemoryInMiB"`
}

type gpuDeviceXML struct {
	Name         string       `xml:"name"`
	Manufacturer string       `xml:"manufacturer"`
	Count        int32        `xml:"count"`
	MemoryInfo   memoryInfo32 `xml:"memoryInfo"`
}

type memoryInfo32 struct {
	SizeInMiB int32 `xml:"sizeInMiB"`
}

type neuronInfoXML struct {
	NeuronDevices                set[neuronDeviceXML] `xml:"neuronDevices"`
	TotalNeuronDeviceMemoryInMiB int32                `xml:"totalNeuronDeviceMemoryInMiB"`
}

type neuronDeviceXML struct {
	Count      int32          `xml:"count"`
	Name       string         `xml:"name"`
	CoreInfo   *neuronCoreXML `xml:"coreInfo,omitempty"`
	MemoryInfo memoryInfo32   `xml:"memoryInfo"`
}

type neuronCoreXML struct {
	Count   int32 `xml:"count"`
	Version int32 `xml:"version"`
}

type inferenceInfoXML struct {
	Accelerators set[inferenceDeviceXML] `xml:"accelerators"`
	TotalMemory  int32                   `xml:"totalInferenceMemoryInMiB"`
}

type inferenceDeviceXML struct {
	Count        int32        `xml:"count"`
	Name         string       `xml:"name"`
	Manufacturer string       `xml:"manufacturer"`
	MemoryInfo   memoryInfo32 `xml:"memoryInfo"`
}

type placementGroupInfoXML struct {
	SupportedStrategies set[valueXML] `xml:"supportedStrategies"`
}

// DescribeInstanceTypeOfferings

type describeInstanceTypeOfferingsXML struct {
	InstanceTypeOfferingSet set[offeringXML] `xml:"instanceTypeOfferingSet"`
	NextToken               string           `xml:"nextToken,omitempty"`
}

type offeringXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

// DescribeAvailabilityZones

type describeAvailabilityZonesXML struct {
	AvailabilityZoneInfo set[zoneXML] `xml:"availabilityZoneInfo"`
}

type zoneXML struct {
	ZoneName           string        `xml:"zoneName"`
	ZoneState          string        `xml:"zoneState"`
	RegionName         string        `xml:"regionName"`
	ZoneID             string        `xml:"zoneId"`
	ZoneType           string        `xml:"zoneType"`
	OptInStatus        string        `xml:"optInStatus"`
	GroupName          string        `xml:"groupName"`
	NetworkBorderGroup string        `xml:"networkBorderGroup"`
	MessageSet         set[valueXML] `xml:"messageSet"`
}

// DescribeSubnets

type describeSubnetsXML struct {
	SubnetSet set[subnetXML] `xml:"subnetSet"`
	NextToken string         `xml:"nextToken,omitempty"`
}

type subnetXML struct {
	SubnetID                string      `xml:"subnetId"`
	SubnetArn               string      `xml:"subnetArn"`
	State                   string      `xml:"state"`
	VPCID                   string      `xml:"vpcId"`
	OwnerID                 string      `xml:"ownerId"`
	CIDRBlock               string      `xml:"cidrBlock"`
	AvailableIPAddressCount int64       `xml:"availableIpAddressCount"`
	AvailabilityZone        string      `xml:"availabilityZone"`
	AvailabilityZoneID      string      `xml:"availabilityZoneId"`
	DefaultForAz            bool        `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool        `xml:"mapPublicIpOnLaunch"`
	TagSet                  set[tagXML] `xml:"tagSet"`
}

// DescribeSecurityGroups

type describeSecurityGroupsXML struct {
	SecurityGroupInfo set[securityGroupXML] `xml:"securityGroupInfo"`
	NextToken         string                `xml:"nextToken,omitempty"`
}

type securityGroupXML struct {
	OwnerID             string        `xml:"ownerId"`
	GroupID             string        `xml:"groupId"`
	GroupName           string        `xml:"groupName"`
	GroupDescription    string        `xml:"groupDescription"`
	VPCID               string        `xml:"vpcId"`
	SecurityGroupArn    string        `xml:"securityGroupArn"`
	IPPermissions       set[valueXML] `xml:"ipPermissions"`
	IPPermissionsEgress set[valueXML] `xml:"ipPermissionsEgress"`
	TagSet              set[tagXML]   `xml:"tagSet"`
}

// DescribeImages

type describeImagesXML struct {
	ImagesSet set[imageXML] `xml:"imagesSet"`
	NextToken string        `xml:"nextToken,omitempty"`
}

type imageXML struct {
	ImageID            string              `xml:"imageId"`
	ImageLocation      string              `xml:"imageLocation"`
	ImageState         string              `xml:"imageState"`
	ImageOwnerID       string              `xml:"imageOwnerId"`
	CreationDate       string              `xml:"creationDate"`
	IsPublic           bool                `xml:"isPublic"`
	Architecture       string              `xml:"architecture"`
	ImageType          string              `xml:"imageType"`
	ImageOwnerAlias    string              `xml:"imageOwnerAlias,omitempty"`
	Name               string              `xml:"name"`
	Description        string              `xml:"description"`
	RootDeviceType     string              `xml:"rootDeviceType"`
	RootDeviceName     string              `xml:"rootDeviceName"`
	BlockDeviceMapping set[blockDeviceXML] `xml:"blockDeviceMapping"`
	VirtualizationType string              `xml:"virtualizationType"`
	Hypervisor         string              `xml:"hypervisor"`
	ENASupport         bool                `xml:"enaSupport"`
	PlatformDetails    string              `xml:"platformDetails"`
	UsageOperation     string              `xml:"usageOperation"`
	BootMode           string              `xml:"bootMode,omitempty"`
	ImdsSupport        string              `xml:"imdsSupport,omitempty"`
	DeprecationTime    string              `xml:"deprecationTime,omitempty"`
	TagSet             *set[tagXML]        `xml:"tagSet,omitempty"`
}

type blockDeviceXML struct {
	DeviceName string       `xml:"deviceName"`
	EBS        *ebsBlockXML `xml:"ebs,omitempty"`
}

type ebsBlockXML struct {
	SnapshotID          string `xml:"snapshotId,omitempty"`
	VolumeSize          int64  `xml:"volumeSize,omitempty"`
	DeleteOnTermination *bool  `xml:"deleteOnTermination,omitempty"`
	VolumeType          string `xml:"volumeType,omitempty"`
	IOPS                int64  `xml:"iops,omitempty"`
	Throughput          int64  `xml:"throughput,omitempty"`
	Encrypted           *bool  `xml:"encrypted,omitempty"`
	KMSKeyID            string `xml:"kmsKeyId,omitempty"`
}

// DescribeSpotPriceHistory

type describeSpotPriceHistoryXML struct {
	SpotPriceHistorySet set[spotPriceXML] `xml:"spotPriceHistorySet"`
	NextToken           string            `xml:"nextToken"`
}

type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
}

// Launch templates

type launchTemplateXML struct {
	LaunchTemplateID     string       `xml:"launchTemplateId"`
	LaunchTemplateName   string       `xml:"launchTemplateName"`
	CreateTime           string       `xml:"createTime"`
	CreatedBy            string       `xml:"createdBy"`
	DefaultVersionNumber int64        `xml:"defaultVersionNumber"`
	LatestVersionNumber  int64        `xml:"latestVersionNumber"`
	TagSet               *set[tagXML] `xml:"tagSet,omitempty"`
}

type launchTemplateResultXML struct {
	LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
}

type describeLaunchTemplatesXML struct {
	LaunchTemplates set[launchTemplateXML] `xml:"launchTemplates"`
	NextToken       string                 `xml:"nextToken,omitempty"`
}

// CreateFleet

type createFleetXML struct {
	FleetID          string                `xml:"fleetId"`
	ErrorSet         set[fleetErrorXML]    `xml:"errorSet"`
	FleetInstanceSet set[fleetInstanceXML] `xml:"fleetInstanceSet"`
}

type fleetErrorXML struct {
	LaunchTemplateAndOverrides ltAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	ErrorCode                  string            `xml:"errorCode"`
	ErrorMessage               string            `xml:"errorMessage"`
}

type fleetInstanceXML struct {
	LaunchTemplateAndOverrides ltAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	InstanceIDs                set[valueXML]     `xml:"instanceIds"`
	InstanceType               string            `xml:"instanceType"`
}

type ltAndOverridesXML struct {
	LaunchTemplateSpecification ltSpecXML    `xml:"launchTemplateSpecification"`
	Overrides                   overridesXML `xml:"overrides"`
}

type ltSpecXML struct {
	LaunchTemplateID   string `xml:"launchTemplateId,omitempty"`
	LaunchTemplateName string `xml:"launchTemplateName,omitempty"`
	Version            string `xml:"version"`
}

type overridesXML struct {
	InstanceType     string  `xml:"instanceType,omitempty"`
	MaxPrice         string  `xml:"maxPrice,omitempty"`
	SubnetID         string  `xml:"subnetId,omitempty"`
	AvailabilityZone string  `xml:"availabilityZone,omitempty"`
	WeightedCapacity float64 `xml:"weightedCapacity,omitempty"`
	Priority         float64 `xml:"priority,omitempty"`
	ImageID          string  `xml:"imageId,omitempty"`
}

// DescribeInstances

type describeInstancesXML struct {
	ReservationSet set[reservationXML] `xml:"reservationSet"`
	NextToken      string              `xml:"nextToken,omitempty"`
}

type reservationXML struct {
	ReservationID string           `xml:"reservationId"`
	OwnerID       string           `xml:"ownerId"`
	GroupSet      set[groupXML]    `xml:"groupSet"`
	InstancesSet  set[instanceXML] `xml:"instancesSet"`
}

type groupXML struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName,omitempty"`
}

type instanceStateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type placementXML struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId,omitempty"`
	GroupName          string `xml:"groupName"`
	GroupID            string `xml:"groupId,omitempty"`
	PartitionNumber    int    `xml:"partitionNumber,omitempty"`
	Tenancy            string `xml:"tenancy"`
}

type monitoringXML struct {
	State string `xml:"state"`
}

type stateReasonXML struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type iamProfileXML struct {
	ARN string `xml:"arn"`
	ID  string `xml:"id"`
}

type metadataOptionsXML struct {
	State                   string `xml:"state"`
	HTTPTokens              string `xml:"httpTokens"`
	HTTPPutResponseHopLimit int64  `xml:"httpPutResponseHopLimit"`
	HTTPEndpoint            string `xml:"httpEndpoint"`
	HTTPProtocolIPv6        string `xml:"httpProtocolIpv6"`
	InstanceMetadataTags    string `xml:"instanceMetadataTags"`
}

type instanceBlockDeviceXML struct {
	DeviceName string `xml:"deviceName"`
	EBS        struct {
		VolumeID            string `xml:"volumeId"`
		Status              string `xml:"status"`
		AttachTime          string `xml:"attachTime"`
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
	} `xml:"ebs"`
}

type instanceXML struct {
	InstanceID            string                      `xml:"instanceId"`
	ImageID               string                      `xml:"imageId"`
	InstanceState         instanceStateXML            `xml:"instanceState"`
	PrivateDNSName        string                      `xml:"privateDnsName"`
	DNSName               string                      `xml:"dnsName"`
	Reason                string                      `xml:"reason"`
	AmiLaunchIndex        int                         `xml:"amiLaunchIndex"`
	ProductCodes          set[valueXML]               `xml:"productCodes"`
	InstanceType          string                      `xml:"instanceType"`
	LaunchTime            string                      `xml:"launchTime"`
	Placement             placementXML                `xml:"placement"`
	Monitoring            monitoringXML               `xml:"monitoring"`
	SubnetID              string                      `xml:"subnetId,omitempty"`
	VPCID                 string                      `xml:"vpcId,omitempty"`
	PrivateIPAddress      string                      `xml:"privateIpAddress,omitempty"`
	SourceDestCheck       bool                        `xml:"sourceDestCheck"`
	GroupSet              set[groupXML]               `xml:"groupSet"`
	StateReason           *stateReasonXML             `xml:"stateReason,omitempty"`
	Architecture          string                      `xml:"architecture"`
	RootDeviceType        string                      `xml:"rootDeviceType"`
	RootDeviceName        string                      `xml:"rootDeviceName"`
	BlockDeviceMapping    set[instanceBlockDeviceXML] `xml:"blockDeviceMapping"`
	InstanceLifecycle     string                      `xml:"instanceLifecycle,omitempty"`
	SpotInstanceRequestID string                      `xml:"spotInstanceRequestId,omitempty"`
	VirtualizationType    string                      `xml:"virtualizationType"`
	ClientToken           string                      `xml:"clientToken"`
	TagSet                *set[tagXML]                `xml:"tagSet,omitempty"`
	Hypervisor            string                      `xml:"hypervisor"`
	IAMInstanceProfile    *iamProfileXML              `xml:"iamInstanceProfile,omitempty"`
	EBSOptimized          bool                        `xml:"ebsOptimized"`
	ENASupport            bool                        `xml:"enaSupport"`
	MetadataOptions       metadataOptionsXML          `xml:"metadataOptions"`
	PlatformDetails       string                      `xml:"platformDetails"`
	UsageOperation        string                      `xml:"usageOperation"`
	BootMode              string                      `xml:"bootMode,omitempty"`
	CapacityReservationID string                      `xml:"capacityReservationId,omitempty"`
}

// TerminateInstances

type terminateInstancesXML struct {
	InstancesSet set[stateChangeXML] `xml:"instancesSet"`
}

type stateChangeXML struct {
	InstanceID    string           `xml:"instanceId"`
	CurrentState  instanceStateXML `xml:"currentState"`
	PreviousState instanceStateXML `xml:"previousState"`
}

// Operations without output answer <return>true</return>.
type returnXML struct {
	Return bool `xml:"return"`
}

// DescribeVpcs

type describeVpcsXML struct {
	VPCSet    set[vpcXML] `xml:"vpcSet"`
	NextToken string      `xml:"nextToken,omitempty"`
}

type vpcXML struct {
	VPCID           string      `xml:"vpcId"`
	OwnerID         string      `xml:"ownerId"`
	State           string      `xml:"state"`
	CIDRBlock       string      `xml:"cidrBlock"`
	DHCPOptionsID   string      `xml:"dhcpOptionsId"`
	InstanceTenancy string      `xml:"instanceTenancy"`
	IsDefault       bool        `xml:"isDefault"`
	TagSet          set[tagXML] `xml:"tagSet"`
}

// Capacity reservations

type capacityReservationXML struct {
	CapacityReservationID  string      `xml:"capacityReservationId"`
	OwnerID                string      `xml:"ownerId"`
	CapacityReservationArn string      `xml:"capacityReservationArn"`
	AvailabilityZoneID     string      `xml:"availabilityZoneId"`
	InstanceType           string      `xml:"instanceType"`
	InstancePlatform       string      `xml:"instancePlatform"`
	AvailabilityZone       string      `xml:"availabilityZone"`
	Tenancy                string      `xml:"tenancy"`
	TotalInstanceCount     int         `xml:"totalInstanceCount"`
	AvailableInstanceCount int         `xml:"availableInstanceCount"`
	EBSOptimized           bool        `xml:"ebsOptimized"`
	EphemeralStorage       bool        `xml:"ephemeralStorage"`
	State                  string      `xml:"state"`
	StartDate              string      `xml:"startDate"`
	EndDate                string      `xml:"endDate,omitempty"`
	EndDateType            string      `xml:"endDateType"`
	InstanceMatchCriteria  string      `xml:"instanceMatchCriteria"`
	CreateDate             string      `xml:"createDate"`
	TagSet                 set[tagXML] `xml:"tagSet"`
	ReservationType        string      `xml:"reservationType"`
	CapacityBlockID        string      `xml:"capacityBlockId,omitempty"`
}

type capacityReservationResultXML struct {
	CapacityReservation capacityReservationXML `xml:"capacityReservation"`
}

type describeCapacityReservationsXML struct {
	CapacityReservationSet set[capacityReservationXML] `xml:"capacityReservationSet"`
	NextToken              string                      `xml:"nextToken,omitempty"`
}
