package nodeclass

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// HashVersion is the version of the Hash scheme.
const HashVersion = "v1"

// hashed are the fields of the spec Hash covers. JSON encoding sorts map
// keys, so the hash does not depend on map order; the kubelet's free-form
// keys are in it with their values (KubeletConfiguration.MarshalJSON),
// compacted, so reformatting them does not change the hash.
type hashed struct {
	AMIFamily                string                      `json:"amiFamily,omitempty"`
	UserData                 *string                     `json:"userData,omitempty"`
	Role                     string                      `json:"role,omitempty"`
	InstanceProfile          *string                     `json:"instanceProfile,omitempty"`
	Tags                     map[string]string           `json:"tags,omitempty"`
	Kubelet                  *awsv1.KubeletConfiguration `json:"kubelet,omitempty"`
	BlockDeviceMappings      []*awsv1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy      *awsv1.InstanceStorePolicy  `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring       *bool                       `json:"detailedMonitoring,omitempty"`
	AssociatePublicIPAddress *bool                       `json:"associatePublicIPAddress,omitempty"`
	MetadataOptions          awsv1.MetadataOptions       `json:"metadataOptions"`
	Context                  *string                     `json:"context,omitempty"`
	// The fields below are omitted when unset, so that a class without
	// them keeps the hash it had before they were acted on. Like the
	// peer, ipPrefixCount is left out: changing it does not drift nodes.
	NetworkInterfaces      []awsv1.NetworkInterface      `json:"networkInterfaces,omitempty"`
	PlacementGroupSelector *awsv1.PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	CPUOptions             *awsv1.CPUOptions             `json:"cpuOptions,omitempty"`
	EnclaveOptions         *awsv1.EnclaveOptions         `json:"enclaveOptions,omitempty"`
	ConnectionTracking     *awsv1.ConnectionTracking     `json:"connectionTracking,omitempty"`
}

// Hash returns the static-field hash of the class (see the package
// documentation for the fields). Defaulted metadata options hash the same
// as explicit defaults.
func Hash(nc *awsv1.EC2NodeClass) string {
	s := nc.Spec
	h := hashed{
		AMIFamily: nc.AMIFamily(), UserData: s.UserData, Role: s.Role, InstanceProfile: s.InstanceProfile,
		Tags: s.Tags, Kubelet: s.Kubelet, BlockDeviceMappings: s.BlockDeviceMappings,
		InstanceStorePolicy: s.InstanceStorePolicy, DetailedMonitoring: s.DetailedMonitoring,
		AssociatePublicIPAddress: s.AssociatePublicIPAddress, MetadataOptions: EffectiveMetadataOptions(s.MetadataOptions),
		Context: s.Context, NetworkInterfaces: networkInterfaceSet(s.NetworkInterfaces),
		PlacementGroupSelector: s.PlacementGroupSelector, CPUOptions: s.CPUOptions,
		EnclaveOptions: s.EnclaveOptions, ConnectionTracking: s.ConnectionTracking,
	}
	b, err := json.Marshal(h)
	if err != nil {
		// Only plain values: cannot happen.
		panic("nodeclass: hashing the spec: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// networkInterfaceSet is the interfaces in (card, device) order: like the
// peer, the hash takes them as a set, so reordering the list does not drift
// nodes.
func networkInterfaceSet(nis []awsv1.NetworkInterface) []awsv1.NetworkInterface {
	if len(nis) == 0 {
		return nil
	}
	out := slices.Clone(nis)
	slices.SortFunc(out, func(a, b awsv1.NetworkInterface) int {
		return cmp.Or(cmp.Compare(a.NetworkCardIndex, b.NetworkCardIndex), cmp.Compare(a.DeviceIndex, b.DeviceIndex), strings.Compare(a.InterfaceType, b.InterfaceType))
	})
	return out
}

// Metadata option defaults (IMDSv2 required, hop limit 1).
const (
	DefaultHTTPEndpoint            = "enabled"
	DefaultHTTPProtocolIPv6        = "disabled"
	DefaultHTTPPutResponseHopLimit = int64(1)
	DefaultHTTPTokens              = "required"
)

// EffectiveMetadataOptions fills unset metadata options with the defaults.
func EffectiveMetadataOptions(m *awsv1.MetadataOptions) awsv1.MetadataOptions {
	out := awsv1.MetadataOptions{}
	if m != nil {
		out = *m.DeepCopy()
	}
	if out.HTTPEndpoint == nil {
		v := DefaultHTTPEndpoint
		out.HTTPEndpoint = &v
	}
	if out.HTTPProtocolIPv6 == nil {
		v := DefaultHTTPProtocolIPv6
		out.HTTPProtocolIPv6 = &v
	}
	if out.HTTPPutResponseHopLimit == nil {
		v := DefaultHTTPPutResponseHopLimit
		out.HTTPPutResponseHopLimit = &v
	}
	if out.HTTPTokens == nil {
		v := DefaultHTTPTokens
		out.HTTPTokens = &v
	}
	return out
}
