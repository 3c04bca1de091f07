package v1

// Instance labels dovetail puts on nodes it launches on EC2; every one is
// well known (its values are known for each instance type), so users may
// use them in NodePool requirements.
const (
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"

	// LabelTopologyZoneID is the zone ID (e.g. use1-az1), stable across
	// accounts unlike the zone name.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
)

// WellKnownLabels are the karpenter.k8s.aws instance labels (and the zone
// ID) users may use in NodePool requirements and template labels. The
// NodePool CRD's validation rules carry the same list; a test keeps them in
// step.
var WellKnownLabels = []string{
	LabelInstanceCategory,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceMemory,
	LabelInstanceEBSBandwidth,
	LabelInstanceNetworkBandwidth,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
	LabelInstanceHypervisor,
	LabelInstanceEncryptionInTransitSupported,
	LabelInstanceLocalNVME,
	LabelCapacityReservationID,
	LabelCapacityReservationType,
	LabelTopologyZoneID,
}

// Tags and labels naming the EC2NodeClass of an instance or node.
const (
	// LabelNodeClass names the EC2NodeClass on nodes and as an instance tag.
	LabelNodeClass = Group + "/ec2nodeclass"
	// TagNodeClass is the instance tag naming the EC2NodeClass.
	TagNodeClass = LabelNodeClass
	// TagEKSClusterName is the instance tag naming the EKS cluster.
	TagEKSClusterName = "eks:eks-cluster-name"
	// TagName is the EC2 Name tag (dovetail sets it to the node name).
	TagName = "Name"
)

// Annotations.
const (
	// AnnotationEC2NodeClassHash carries the hash of the EC2NodeClass spec a
	// NodeClaim was launched with, for drift.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion versions the hashing scheme.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationInstanceTagged is "true" once the instance got its tags.
	AnnotationInstanceTagged = Group + "/tagged"
)

// Finalizer on EC2NodeClasses: the class is not deleted while NodeClaims
// still use it, and its instance profile is cleaned up.
const TerminationFinalizer = Group + "/termination"

// AMI families.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyCustom       = "Custom"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
)

// AMIFamilies lists the amiFamily values the API accepts.
var AMIFamilies = []string{
	AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyCustom,
	AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyWindows2025,
}

// aliasFamilies maps the family part of an AMI alias to its amiFamily.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// EC2NodeClass condition types (plus Ready, the root).
const (
	ConditionTypeReady                     = "Ready"
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	// ConditionTypePlacementGroupReady: spec.placementGroupSelector
	// resolved to an available placement group. One of the class's Ready
	// dependents only while the selector is set (ReadyDependentsOf), as
	// the peer's.
	ConditionTypePlacementGroupReady = "PlacementGroupReady"
	// ConditionTypeSpotPricesReady is dovetail's own: False while the
	// controller prices spot offerings without live spot prices (see
	// docs/aws.md). Not one of ReadyDependents.
	ConditionTypeSpotPricesReady = "SpotPricesReady"
	// ConditionTypeSpecSupported is dovetail's own: False while the class
	// sets fields dovetail accepts but does not act on (the message names
	// them). Not one of ReadyDependents.
	ConditionTypeSpecSupported = "SpecSupported"
)

// ReadyDependents are the conditions that together make an EC2NodeClass
// Ready, with PlacementGroupReady too when the class selects a placement
// group (ReadyDependentsOf).
var ReadyDependents = []string{
	ConditionTypeSubnetsReady, ConditionTypeSecurityGroupsReady,
	ConditionTypeAMIsReady, ConditionTypeInstanceProfileReady,
	ConditionTypeValidationSucceeded,
}
