package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass says how to launch an EC2 instance for a node.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName=ec2nc;ec2ncs
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EC2NodeClassSpec `json:"spec"`
	// +optional
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// EC2NodeClassSpec is the launch configuration of a node class.
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms find the subnets instances may launch in.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms find the security groups of instances.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// CapacityReservationSelectorTerms find the capacity reservations
	// instances may launch into.
	// +kubebuilder:validation:MaxItems=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// AssociatePublicIPAddress overrides the subnet's public IP setting.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// AMISelectorTerms find the AMIs instances boot from; with tag terms
	// the newest matching image wins.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// AMIFamily selects the bootstrap format (user data, block devices).
	// Optional when an AMI alias gives the family.
	// +kubebuilder:validation:Enum=AL2;AL2023;Bottlerocket;Custom;Windows2019;Windows2022;Windows2025
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// UserData is merged with the bootstrap user data of the family.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Role is the IAM role nodes assume; dovetail manages an instance
	// profile for it. Exactly one of role and instanceProfile.
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is an existing IAM instance profile to launch with.
	// Exactly one of role and instanceProfile.
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// Tags are put on instances, volumes and launch templates.
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet configures the kubelet on the nodes.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// BlockDeviceMappings are the instances' volumes.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// InstanceStorePolicy says what to do with local NVMe instance stores.
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// DetailedMonitoring turns on 1-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// MetadataOptions configure the instance metadata service.
	// +kubebuilder:default={httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// Context is passed to CreateFleet (reserved for AWS's use).
	// +optional
	Context *string `json:"context,omitempty"`
}

// SubnetSelectorTerm finds subnets by tags or by ID.
type SubnetSelectorTerm struct {
	// Tags a subnet must carry ("*" matches any value).
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the subnet.
	// +kubebuilder:validation:Pattern="^subnet-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm finds security groups by tags, ID or name.
type SecurityGroupSelectorTerm struct {
	// Tags a security group must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the security group.
	// +kubebuilder:validation:Pattern="^sg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm finds capacity reservations by tags or ID,
// optionally limited to an owning account.
type CapacityReservationSelectorTerm struct {
	// Tags a reservation must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the reservation.
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
}

// AMISelectorTerm finds AMIs by alias, tags, ID, name, owner or SSM
// parameter.
type AMISelectorTerm struct {
	// Alias is family@version, e.g. al2023@latest or al2023@v20240807.
	// +kubebuilder:validation:MaxLength=30
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags an AMI must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the AMI.
	// +kubebuilder:validation:Pattern="^ami-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the AMI (wildcards allowed).
	// +optional
	Name string `json:"name,omitempty"`
	// Owner is an account ID or an alias such as "self" or "amazon".
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter names an SSM parameter whose value is an AMI ID.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// KubeletConfiguration is the subset of kubelet settings a node class may
// set.
type KubeletConfiguration struct {
	// ClusterDNS are the DNS server IPs pods use.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods caps the pods per node.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps the pods per CPU core (the lower of this and MaxPods
	// applies).
	// +kubebuilder:validation:Minimum=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved is kept back for the operating system.
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is kept back for Kubernetes daemons.
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard are thresholds at which pods are evicted at once.
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft are thresholds at which pods are evicted after a grace
	// period.
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is the grace period of each soft threshold.
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod caps pod termination grace during soft
	// eviction, in seconds.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage at which image garbage
	// collection always runs.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage garbage collection frees
	// down to; below ImageGCHighThresholdPercent.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota turns on CPU CFS quota enforcement for limits.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// MetadataOptions configure the EC2 instance metadata service.
type MetadataOptions struct {
	// HTTPEndpoint turns the metadata service on or off.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns the IPv6 metadata endpoint on or off.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is the IP hop limit of metadata token replies.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens: "required" (IMDSv2 only) or "optional".
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum=required;optional
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping is one volume of an instance.
type BlockDeviceMapping struct {
	// DeviceName is the device name, e.g. /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS describes the EBS volume.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the volume as the root volume (at most one).
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume with the instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS for io1, io2 and gp3 volumes.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the key used to encrypt the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the snapshot the volume starts from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput of a gp3 volume in MiB/s.
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeSize is the volume size as a quantity, e.g. 20Gi.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum=standard;io1;io2;gp2;sc1;st1;gp3
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// InstanceStorePolicy says how local instance-store disks are used.
// +kubebuilder:validation:Enum=RAID0
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 stripes the instance stores into one volume used
// for ephemeral storage.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// EC2NodeClassStatus is what the selector terms resolved to.
type EC2NodeClassStatus struct {
	// Subnets resolved from subnetSelectorTerms.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups resolved from securityGroupSelectorTerms.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations resolved from capacityReservationSelectorTerms.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs resolved from amiSelectorTerms, with the requirements each
	// satisfies (e.g. its architecture).
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile in use.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions: SubnetsReady, SecurityGroupsReady, AMIsReady,
	// InstanceProfileReady, Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// +required
	ID string `json:"id"`
	// +required
	Zone string `json:"zone"`
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// +required
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved image.
type AMI struct {
	// +required
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
	// Deprecated is true when the image is past its deprecation time.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Requirements an instance type must meet to boot the image.
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// +required
	ID string `json:"id"`
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// +required
	InstanceType string `json:"instanceType"`
	// +required
	OwnerID string `json:"ownerID"`
	// InstanceMatchCriteria: open or targeted.
	// +kubebuilder:validation:Enum=open;targeted
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// ReservationType: default or capacity-block.
	// +kubebuilder:validation:Enum=default;capacity-block
	// +optional
	ReservationType string `json:"reservationType,omitempty"`
	// State: active or expiring.
	// +kubebuilder:validation:Enum=active;expiring
	// +optional
	State string `json:"state,omitempty"`
	// EndTime is when the reservation ends, if it does.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}
