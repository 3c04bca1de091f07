package awsemu

import (
	"fmt"
	"sort"
	"strconv"
)

// The emulator keeps one version per launch template (CreateLaunchTemplate
// makes version 1, which is both $Default and $Latest; there is no
// CreateLaunchTemplateVersion), so DescribeLaunchTemplateVersions answers
// with that version. It is served for `dovetail migrate`, which reads the
// AMI, instance type, security groups and instance profile a node group's
// or Auto Scaling group's launch template sets.
func init() {
	ec2Ops["DescribeLaunchTemplateVersions"] = (*Emulator).describeLaunchTemplateVersions
	opPageLimits["DescribeLaunchTemplateVersions"] = pageLimits{min: 1} // botocore leaves the maximum open
}

type ltVersionXML struct {
	LaunchTemplateID   string           `xml:"launchTemplateId"`
	LaunchTemplateName string           `xml:"launchTemplateName"`
	VersionNumber      int64            `xml:"versionNumber"`
	CreateTime         string           `xml:"createTime"`
	CreatedBy          string           `xml:"createdBy"`
	DefaultVersion     bool             `xml:"defaultVersion"`
	Data               ltVersionDataXML `xml:"launchTemplateData"`
}

type ltProfileXML struct {
	ARN  string `xml:"arn,omitempty"`
	Name string `xml:"name,omitempty"`
}

type ltNetworkInterfaceXML struct {
	DeviceIndex              int64           `xml:"deviceIndex"`
	NetworkCardIndex         *int64          `xml:"networkCardIndex,omitempty"`
	InterfaceType            string          `xml:"interfaceType,omitempty"`
	AssociatePublicIPAddress *bool           `xml:"associatePublicIpAddress,omitempty"`
	SubnetID                 string          `xml:"subnetId,omitempty"`
	Groups                   *groupIDSet     `xml:"groupSet,omitempty"`
	Ipv4PrefixCount          *int64          `xml:"ipv4PrefixCount,omitempty"`
	ConnTrack                *ltConnTrackXML `xml:"connectionTrackingSpecification,omitempty"`
}

// groupIDSet is a launch template interface's groupSet, whose members EC2
// names groupId (not item).
type groupIDSet struct {
	IDs []string `xml:"groupId"`
}

type ltConnTrackXML struct {
	TCPEstablished *int64 `xml:"tcpEstablishedTimeout,omitempty"`
	UDPStream      *int64 `xml:"udpStreamTimeout,omitempty"`
	UDP            *int64 `xml:"udpTimeout,omitempty"`
}

type ltEBSXML struct {
	DeleteOnTermination      *bool  `xml:"deleteOnTermination,omitempty"`
	Encrypted                *bool  `xml:"encrypted,omitempty"`
	Iops                     int64  `xml:"iops,omitempty"`
	KMSKeyID                 string `xml:"kmsKeyId,omitempty"`
	SnapshotID               string `xml:"snapshotId,omitempty"`
	Throughput               int64  `xml:"throughput,omitempty"`
	VolumeInitializationRate int64  `xml:"volumeInitializationRate,omitempty"`
	VolumeSize               int64  `xml:"volumeSize,omitempty"`
	VolumeType               string `xml:"volumeType,omitempty"`
}

type ltBlockDeviceXML struct {
	DeviceName string   `xml:"deviceName"`
	EBS        ltEBSXML `xml:"ebs"`
}

type ltCPUOptionsXML struct {
	CoreCount            *int64 `xml:"coreCount,omitempty"`
	NestedVirtualization string `xml:"nestedVirtualization,omitempty"`
	ThreadsPerCore       *int64 `xml:"threadsPerCore,omitempty"`
}

type ltEnclaveXML struct {
	Enabled bool `xml:"enabled"`
}

type ltPlacementXML struct {
	GroupID         string `xml:"groupId,omitempty"`
	GroupName       string `xml:"groupName,omitempty"`
	PartitionNumber *int64 `xml:"partitionNumber,omitempty"`
}

type ltMetadataXML struct {
	HTTPEndpoint            string `xml:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        string `xml:"httpProtocolIpv6,omitempty"`
	HTTPPutResponseHopLimit int64  `xml:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              string `xml:"httpTokens,omitempty"`
	InstanceMetadataTags    string `xml:"instanceMetadataTags,omitempty"`
}

type ltTagSpecXML struct {
	ResourceType string      `xml:"resourceType"`
	Tags         set[tagXML] `xml:"tagSet"`
}

type ltVersionDataXML struct {
	ImageID            string                      `xml:"imageId,omitempty"`
	InstanceType       string                      `xml:"instanceType,omitempty"`
	UserData           string                      `xml:"userData,omitempty"`
	SecurityGroupIDs   *set[string]                `xml:"securityGroupIdSet,omitempty"`
	SecurityGroupNames *set[string]                `xml:"securityGroupSet,omitempty"`
	Profile            *ltProfileXML               `xml:"iamInstanceProfile,omitempty"`
	NetworkInterfaces  *set[ltNetworkInterfaceXML] `xml:"networkInterfaceSet,omitempty"`
	TagSpecs           *set[ltTagSpecXML]          `xml:"tagSpecificationSet,omitempty"`
	BlockDevices       *set[ltBlockDeviceXML]      `xml:"blockDeviceMappingSet,omitempty"`
	CPUOptions         *ltCPUOptionsXML            `xml:"cpuOptions,omitempty"`
	EnclaveOptions     *ltEnclaveXML               `xml:"enclaveOptions,omitempty"`
	Placement          *ltPlacementXML             `xml:"placement,omitempty"`
	MetadataOptions    *ltMetadataXML              `xml:"metadataOptions,omitempty"`
}

type describeLTVersionsXML struct {
	Versions  set[ltVersionXML] `xml:"launchTemplateVersionSet"`
	NextToken string            `xml:"nextToken,omitempty"`
}

func optStrings(v []string) *set[string] {
	if len(v) == 0 {
		return nil
	}
	return &set[string]{Items: append([]string(nil), v...)}
}

// describeLaunchTemplateVersions answers for one template (by id or name)
// the versions asked for: none (all), "1", "$Default" or "$Latest"; any
// other number is InvalidLaunchTemplateVersion.NotFound, as EC2 says for a
// version that does not exist. Filters are not supported (refused).
func (e *Emulator) describeLaunchTemplateVersions(req *request) (any, *apiError) {
	p := req.params
	if p.Has("Filter") {
		return nil, newAPIError("InvalidParameterValue", 400, "the emulator does not filter DescribeLaunchTemplateVersions")
	}
	pg, aerr := parsePage(p, "DescribeLaunchTemplateVersions")
	if aerr != nil {
		return nil, aerr
	}
	lt, aerr := e.findLaunchTemplate(p.Get("LaunchTemplateId"), p.Get("LaunchTemplateName"))
	if aerr != nil {
		return nil, aerr
	}
	for _, v := range p.Strings("LaunchTemplateVersion") {
		switch v {
		case "1", "$Default", "$Latest":
		default:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return nil, errInvalidParameterValue("LaunchTemplateVersion", v, "Valid values are a version number, $Latest or $Default.")
			}
			return nil, newAPIError("InvalidLaunchTemplateId.VersionNotFound", 400, "Could not find launch template version %s for the launch template %s.", v, lt.ID)
		}
	}
	d := lt.Data
	data := ltVersionDataXML{
		ImageID: d.ImageID, InstanceType: d.InstanceType, UserData: d.UserData,
		SecurityGroupIDs: optStrings(d.SecurityGroupIDs), SecurityGroupNames: optStrings(d.SecurityGroupNames),
	}
	if d.ProfileARN != "" || d.ProfileName != "" {
		data.Profile = &ltProfileXML{ARN: d.ProfileARN, Name: d.ProfileName}
	}
	if len(d.NetworkInterfaces) > 0 {
		data.NetworkInterfaces = &set[ltNetworkInterfaceXML]{}
		for _, n := range d.NetworkInterfaces {
			x := ltNetworkInterfaceXML{
				DeviceIndex: n.DeviceIndex, NetworkCardIndex: n.NetworkCardIndex, InterfaceType: n.InterfaceType,
				AssociatePublicIPAddress: n.AssociatePublicIPAddress, SubnetID: n.SubnetID,
				Ipv4PrefixCount: n.Ipv4PrefixCount,
			}
			if len(n.Groups) > 0 {
				x.Groups = &groupIDSet{IDs: append([]string(nil), n.Groups...)}
			}
			if c := n.ConnTrack; c != nil {
				x.ConnTrack = &ltConnTrackXML{TCPEstablished: c.TCPEstablished, UDPStream: c.UDPStream, UDP: c.UDP}
			}
			data.NetworkInterfaces.Items = append(data.NetworkInterfaces.Items, x)
		}
	}
	if len(d.BlockDevices) > 0 {
		data.BlockDevices = &set[ltBlockDeviceXML]{}
		for _, b := range d.BlockDevices {
			data.BlockDevices.Items = append(data.BlockDevices.Items, ltBlockDeviceXML{DeviceName: b.DeviceName, EBS: ltEBSXML{
				DeleteOnTermination: b.DeleteOnTermination, Encrypted: b.Encrypted, Iops: b.IOPS, KMSKeyID: b.KMSKeyID,
				SnapshotID: b.SnapshotID, Throughput: b.Throughput, VolumeInitializationRate: b.VolumeInitializationRate,
				VolumeSize: b.VolumeSizeGiB, VolumeType: b.VolumeType,
			}})
		}
	}
	if d.NestedVirtualization != "" || d.CoreCount != nil || d.ThreadsPerCore != nil {
		data.CPUOptions = &ltCPUOptionsXML{CoreCount: d.CoreCount, NestedVirtualization: d.NestedVirtualization, ThreadsPerCore: d.ThreadsPerCore}
	}
	if d.EnclavesEnabled != nil {
		data.EnclaveOptions = &ltEnclaveXML{Enabled: *d.EnclavesEnabled}
	}
	if d.PlacementGroupName != "" || d.PlacementGroupID != "" || d.PlacementPartitionNumber != nil {
		data.Placement = &ltPlacementXML{GroupID: d.PlacementGroupID, GroupName: d.PlacementGroupName, PartitionNumber: d.PlacementPartitionNumber}
	}
	if m := d.MetadataOptions; m != nil {
		data.MetadataOptions = &ltMetadataXML{HTTPEndpoint: m.HTTPEndpoint, HTTPProtocolIPv6: m.HTTPProtocolIPv6,
			HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit, HTTPTokens: m.HTTPTokens, InstanceMetadataTags: m.InstanceMetadataTags}
	}
	if len(d.TagSpecs) > 0 {
		data.TagSpecs = &set[ltTagSpecXML]{}
		types := make([]string, 0, len(d.TagSpecs))
		for rt := range d.TagSpecs {
			types = append(types, rt)
		}
		sort.Strings(types)
		for _, rt := range types {
			ts := ltTagSpecXML{ResourceType: rt}
			keys := make([]string, 0, len(d.TagSpecs[rt]))
			for k := range d.TagSpecs[rt] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				ts.Tags.Items = append(ts.Tags.Items, tagXML{Key: k, Value: d.TagSpecs[rt][k]})
			}
			data.TagSpecs.Items = append(data.TagSpecs.Items, ts)
		}
	}
	items := []ltVersionXML{{
		LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, VersionNumber: 1,
		CreateTime: lt.CreateTime.UTC().Format(ec2Time), CreatedBy: fmt.Sprintf("arn:aws:iam::%s:root", e.opts.AccountID),
		DefaultVersion: true, Data: data,
	}}
	from, to, next := pg.slice("DescribeLaunchTemplateVersions", len(items))
	return describeLTVersionsXML{Versions: set[ltVersionXML]{Items: items[from:to]}, NextToken: next}, nil
}
