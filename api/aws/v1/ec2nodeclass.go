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

	// Spec is optional in the schema, as in the peer's; a class without
	// one fails RuntimeValidate (ValidationSucceeded=False).
	// +optional
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
//
// +kubebuilder:validation:XValidation:rule="(has(self.role) && size(self.role) > 0) != (has(self.instanceProfile) && size(self.instanceProfile) > 0)",message="exactly one of role and instanceProfile must be set"
// +kubebuilder:validation:XValidation:rule="has(self.amiFamily) || self.amiSelectorTerms.exists(t, has(t.alias))",message="amiFamily is required unless amiSelectorTerms holds an alias"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || self.amiSelectorTerms.all(t, !has(t.alias) || t.alias.startsWith({'AL2':'al2@','AL2023':'al2023@','Bottlerocket':'bottlerocket@','Custom':'-','Windows2019':'windows2019@','Windows2022':'windows2022@','Windows2025':'windows2025@'}[self.amiFamily]))",message="amiFamily must match the family of the amiSelectorTerms alias"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.role) || size(oldSelf.role) == 0 || (has(self.role) && size(self.role) > 0)",message="changing from role to instanceProfile is not supported"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.instanceProfile) || size(oldSelf.instanceProfile) == 0 || (has(self.instanceProfile) && size(self.instanceProfile) > 0)",message="changing from instanceProfile to role is not supported"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms find the subnets instances may launch in.
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="expected at least one, got none"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms find the security groups of instances.
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="expected at least one, got none"
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
	// the newest matching image wins. An alias term must be the only term.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:XValidation:rule="!self.exists(t, has(t.alias)) || size(self) == 1",message="an alias term must be the only amiSelectorTerms entry"
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
	// Tags are put on instances, volumes and launch templates. Tags dovetail
	// sets itself are refused.
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0)",message="tags must not have empty keys"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['karpenter.sh/nodepool','karpenter.sh/nodeclaim','karpenter.k8s.aws/ec2nodeclass','eks:eks-cluster-name']) && !k.startsWith('kubernetes.io/cluster/'))",message="tags may not set karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name or kubernetes.io/cluster/*"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet configures the kubelet on the nodes. The schema takes it
	// free-form, as the peer's does (see KubeletConfiguration).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// BlockDeviceMappings are the instances' volumes; at most one is the root
	// volume.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.filter(x, has(x.rootVolume) && x.rootVolume).size() <= 1",message="at most one blockDeviceMappings entry may be the rootVolume"
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

	// The fields below are the peer's. They go into the launch template
	// as the peer maps them, and those EC2 takes only on some instance
	// types narrow the types a class launches; what is still not done
	// (narrowing for nested virtualization) gives SpecSupported=False
	// naming it (see nodeclass.UnsupportedFields and docs/aws.md).

	// NetworkInterfaces configure the instances' network interfaces
	// (e.g. EFA-only interfaces); beyond a lone primary interface, only
	// instance types with the cards, interfaces per card and EFA
	// interfaces they need are launched.
	// +kubebuilder:validation:MaxItems=150
	// +kubebuilder:validation:XValidation:rule="self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')",message="networkInterfaces need a primary interface (deviceIndex 0 on networkCardIndex 0, interfaceType interface)"
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",message="networkInterfaces must not repeat a (networkCardIndex, deviceIndex) pair and allow one efa-only interface per network card"
	// +optional
	NetworkInterfaces []NetworkInterface `json:"networkInterfaces,omitempty"`
	// PlacementGroupSelector selects a placement group by name or id;
	// instances launch into it. A selector that matches no available
	// group makes the class not Ready (PlacementGroupReady False).
	// +kubebuilder:validation:XValidation:rule="has(self.name) || has(self.id)",message="placementGroupSelector needs name or id"
	// +kubebuilder:validation:XValidation:rule="!(has(self.name) && has(self.id))",message="placementGroupSelector takes name or id, not both"
	// +optional
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	// CPUOptions configure the instances' CPUs (nested virtualization);
	// instance types are not narrowed to those supporting it.
	// +optional
	CPUOptions *CPUOptions `json:"cpuOptions,omitempty"`
	// EnclaveOptions turn Nitro Enclaves on; only instance types that
	// support them are then launched.
	// +optional
	EnclaveOptions *EnclaveOptions `json:"enclaveOptions,omitempty"`
	// ConnectionTracking sets the interfaces' connection-tracking
	// timeouts; only Nitro instance types are then launched.
	// +kubebuilder:validation:XValidation:rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",message="connectionTracking needs tcpEstablishedTimeout, udpStreamTimeout or udpTimeout"
	// +optional
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
	// IPPrefixCount is the number of IPv4 prefixes to assign to the
	// interfaces (all but efa-only ones).
	// +kubebuilder:validation:Minimum=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`
}

// NetworkInterface is one network interface of an instance.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is on.
	// +kubebuilder:validation:Minimum=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's index on the card.
	// +kubebuilder:validation:Minimum=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is interface or efa-only.
	// +kubebuilder:validation:Enum=interface;efa-only
	// +required
	InterfaceType string `json:"interfaceType"`
}

// The values of NetworkInterface.InterfaceType.
const (
	InterfaceTypeInterface = "interface"
	InterfaceTypeEFAOnly   = "efa-only"
)

// PlacementGroupSelector names a placement group.
type PlacementGroupSelector struct {
	// Name of the placement group.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Name string `json:"name,omitempty"`
	// ID of the placement group.
	// +kubebuilder:validation:Pattern="^pg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// CPUOptions are instance CPU settings.
type CPUOptions struct {
	// NestedVirtualization is enabled or disabled.
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	NestedVirtualization string `json:"nestedVirtualization,omitempty"`
}

// EnclaveOptions are Nitro Enclaves settings.
type EnclaveOptions struct {
	// Enabled turns Nitro Enclaves on.
	// +required
	Enabled *bool `json:"enabled"`
}

// ConnectionTracking are connection-tracking timeouts in seconds.
type ConnectionTracking struct {
	// TCPEstablishedTimeout, 60 to 432000.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout, 60 to 180.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout, 30 to 60.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// SubnetSelectorTerm finds subnets by tags or by ID.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id)",message="a subnet selector term needs tags or id"
// +kubebuilder:validation:XValidation:rule="!(has(self.id) && has(self.tags))",message="id is mutually exclusive with tags in a subnet selector term"
type SubnetSelectorTerm struct {
	// Tags a subnet must carry ("*" matches any value).
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(self[k]) > 0)",message="tags must not have empty keys or values"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the subnet.
	// +kubebuilder:validation:Pattern="subnet-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm finds security groups by tags, ID or name.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id) || has(self.name)",message="a security group selector term needs tags, id or name"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.tags) || has(self.name))",message="id is mutually exclusive with tags and name in a security group selector term"
// +kubebuilder:validation:XValidation:rule="!has(self.name) || !has(self.tags)",message="name is mutually exclusive with tags in a security group selector term"
type SecurityGroupSelectorTerm struct {
	// Tags a security group must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(self[k]) > 0)",message="tags must not have empty keys or values"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the security group.
	// +kubebuilder:validation:Pattern="sg-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm finds capacity reservations by tags or ID,
// optionally limited to an owning account.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id) || has(self.instanceMatchCriteria)",message="a capacity reservation selector term needs tags, id or instanceMatchCriteria"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.tags) || has(self.ownerID) || has(self.instanceMatchCriteria))",message="id is mutually exclusive with tags, ownerID and instanceMatchCriteria in a capacity reservation selector term"
type CapacityReservationSelectorTerm struct {
	// Tags a reservation must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(self[k]) > 0)",message="tags must not have empty keys or values"
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
	// InstanceMatchCriteria selects open or targeted reservations.
	// +kubebuilder:validation:Enum=open;targeted
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// AMISelectorTerm finds AMIs by alias, tags, ID, name, owner or SSM
// parameter.
//
// +kubebuilder:validation:XValidation:rule="has(self.alias) || has(self.tags) || has(self.id) || has(self.name) || has(self.ssmParameter)",message="an AMI selector term needs alias, tags, id, name or ssmParameter"
// +kubebuilder:validation:XValidation:rule="!has(self.alias) || !(has(self.tags) || has(self.id) || has(self.name) || has(self.owner) || has(self.ssmParameter))",message="alias is mutually exclusive with the other fields of an AMI selector term"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.tags) || has(self.name) || has(self.owner) || has(self.ssmParameter))",message="id is mutually exclusive with the other fields of an AMI selector term"
// +kubebuilder:validation:XValidation:rule="!has(self.ssmParameter) || !(has(self.tags) || has(self.name) || has(self.owner))",message="ssmParameter is mutually exclusive with the other fields of an AMI selector term"
type AMISelectorTerm struct {
	// Alias is family@version: family one of al2, al2023, bottlerocket,
	// windows2019, windows2022, windows2025; version "latest" or a version
	// such as v20240807 (Windows families take "latest" only).
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+@[A-Za-z0-9._-]+$')",message="alias must have the form family@version, e.g. al2023@latest"
	// +kubebuilder:validation:XValidation:rule="self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']",message="alias family must be one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('windows') || self.endsWith('@latest')",message="alias version must be latest for Windows families"
	// +kubebuilder:validation:XValidation:rule="self.endsWith('@latest') || self.matches('@v?[0-9][A-Za-z0-9._-]*$')",message="alias version must be latest or a version such as v20240807"
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags an AMI must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(self[k]) > 0)",message="tags must not have empty keys or values"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the AMI.
	// +kubebuilder:validation:Pattern="ami-[0-9a-z]+"
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

// KubeletConfiguration is the kubelet settings of a node class. The keys
// below are typed and acted on; like the peer's CRD, which takes any
// kubelet configuration key, other keys are accepted and preserved:
// UnknownKeys lists them and UnknownValues holds their values, which AL2023
// user data passes to the kubelet as the peer does; on other families the
// class gets SpecSupported=False naming them. As in the peer's CRD, nothing is
// checked at admission: value types (TypeErrors), bounds, key names and
// the rules between keys are checked by RuntimeValidate and reported as
// ValidationSucceeded=False, as the peer reports them.
//
// +kubebuilder:pruning:PreserveUnknownFields
type KubeletConfiguration struct {
	// UnknownKeys are the keys of the object as read that are not fields
	// below (sorted); never written back.
	UnknownKeys []string `json:"-"`
	// UnknownValues are the values of UnknownKeys as read, as JSON text
	// (AL2023 user data passes them to the kubelet); never written back.
	UnknownValues map[string]string `json:"-"`
	// TypeErrors are the typed keys of the object as read whose values
	// have another type (left unset), with what they must be; never
	// written back. RuntimeValidate reports them.
	TypeErrors map[string]string `json:"-"`
	// ClusterDNS are the DNS server IPs pods use.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods caps the pods per node.
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps the pods per CPU core (the lower of this and MaxPods
	// applies).
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
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage garbage collection frees
	// down to; below ImageGCHighThresholdPercent.
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
//
// +kubebuilder:validation:XValidation:rule="!has(self.volumeInitializationRate) || (has(self.snapshotID) && size(self.snapshotID) > 0)",message="volumeInitializationRate needs a snapshotID"
// +kubebuilder:validation:XValidation:rule="has(self.volumeSize) || has(self.snapshotID)",message="an EBS volume needs a volumeSize or a snapshotID"
type BlockDevice struct {
	// DeleteOnTermination deletes the volume with the instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS for io1, io2 and gp3 volumes (EC2 refuses values it does not
	// sell at launch; the CRD, like the peer's, does not bound them).
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the key used to encrypt the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the snapshot the volume starts from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// VolumeInitializationRate is the rate (MiB/s, 100 to 300) at which a
	// volume made from a snapshot is initialized (the EBS mapping's
	// VolumeInitializationRate; needs snapshotID).
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// Throughput of a gp3 volume in MiB/s (unbounded here, as in the peer's
	// CRD).
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeSize is the volume size as a quantity, e.g. 20Gi (at most 64Ti).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$`
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
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// +required
	InstanceType string `json:"instanceType"`
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// InstanceMatchCriteria: open or targeted.
	// +kubebuilder:validation:Enum=open;targeted
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// Interruptible reservations may be reclaimed by their owner.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
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
