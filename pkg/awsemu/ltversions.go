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
	DeviceIndex              int64        `xml:"deviceIndex"`
	AssociatePublicIPAddress *bool        `xml:"associatePublicIpAddress,omitempty"`
	SubnetID                 string       `xml:"subnetId,omitempty"`
	Groups                   *set[string] `xml:"groupSet,omitempty"`
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
			data.NetworkInterfaces.Items = append(data.NetworkInterfaces.Items, ltNetworkInterfaceXML{
				DeviceIndex: n.DeviceIndex, AssociatePublicIPAddress: n.AssociatePublicIPAddress, SubnetID: n.SubnetID, Groups: optStrings(n.Groups)})
		}
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
