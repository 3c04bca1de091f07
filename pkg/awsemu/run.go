package awsemu

import (
	"strconv"
)

// runInstances launches MinCount..MaxCount instances of one type into one
// subnet, from the request's own parameters on top of an optional launch
// template (RunInstances; DryRun is answered before, like every EC2 call).
// It applies the same launch rules as CreateFleet: a type not offered in
// the zone is Unsupported, an injected ICE is InsufficientInstanceCapacity,
// and so on, as the error of the call.
func (e *Emulator) runInstances(req *request) (any, *apiError) {
	p := req.params
	minCount, okMin, aerr := p.Int("MinCount")
	if aerr != nil {
		return nil, aerr
	}
	maxCount, okMax, aerr := p.Int("MaxCount")
	if aerr != nil {
		return nil, aerr
	}
	if !okMin {
		return nil, errMissingParameter("MinCount")
	}
	if !okMax {
		return nil, errMissingParameter("MaxCount")
	}
	if minCount < 1 || maxCount < minCount {
		return nil, errInvalidParameterValue("MinCount", strconv.FormatInt(minCount, 10), "MinCount must be at least 1 and at most MaxCount.")
	}
	if maxCount > 1000 {
		return nil, errInvalidParameterValue("MaxCount", strconv.FormatInt(maxCount, 10), "Expecting a value between 1 and 1000.")
	}
	data, aerr := e.parseLTData(p)
	if aerr != nil {
		return nil, aerr
	}
	lt := &launchTemplateRec{Data: data}
	if p.Has("LaunchTemplate") {
		spec := p.Sub("LaunchTemplate")
		base, aerr := e.findLaunchTemplate(spec.Get("LaunchTemplateId"), spec.Get("LaunchTemplateName"))
		if aerr != nil {
			return nil, aerr
		}
		lt = &launchTemplateRec{ID: base.ID, Name: base.Name, Data: mergeLTData(base.Data, data)}
	}
	typeName := lt.Data.InstanceType
	if typeName == "" {
		return nil, errMissingParameter("InstanceType")
	}
	it := e.typeIndex[typeName]
	if it == nil {
		return nil, errInvalidParameterValue("InstanceType", typeName, "The instance type does not exist.")
	}
	if lt.Data.ImageID == "" {
		return nil, errMissingParameter("ImageId")
	}
	img := e.acct.image(lt.Data.ImageID)
	if img == nil {
		return nil, newAPIError("InvalidAMIID.NotFound", 400, "The image id '[%s]' does not exist", lt.Data.ImageID)
	}
	o := newParams(nil)
	if id := p.Get("SubnetId"); id != "" {
		o = newParams(map[string][]string{"SubnetId": {id}})
	} else if z := p.Get("Placement.AvailabilityZone"); z != "" {
		o = newParams(map[string][]string{"AvailabilityZone": {z}})
	}
	subnets, aerr := e.candidateSubnets(o, lt)
	if aerr != nil {
		return nil, aerr
	}
	capType := "on-demand"
	mt := p.Get("InstanceMarketOptions.MarketType")
	if mt == "" {
		mt = lt.Data.MarketType
	}
	switch mt {
	case "":
	case "spot", MarketCapacityBlock:
		capType = mt
	default:
		return nil, errInvalidParameterValue("InstanceMarketOptions.MarketType", mt, "Valid values are spot, capacity-block.")
	}
	tags := lt.Data.TagSpecs["instance"]
	c := fleetCandidate{lt: lt, instanceType: it, subnet: subnets[0], imageID: img.ID}
	e.judge(&c, img, capType)
	if c.errCode != "" {
		return nil, newAPIError(c.errCode, ec2ErrorStatus(c.errCode), "%s", c.errMsg)
	}
	reservation := e.newID("r")
	now := e.clock.Now()
	out := runInstancesXML{ReservationID: reservation, OwnerID: e.opts.AccountID}
	for n := int64(0); n < maxCount; n++ {
		in, aerr := e.launch(&c, capType, tags, "", reservation, now)
		if aerr != nil {
			if n < minCount {
				return nil, aerr
			}
			break
		}
		out.InstancesSet.Items = append(out.InstancesSet.Items, e.instanceToXML(in))
	}
	return out, nil
}

// mergeLTData is a launch template's data with the request's non-empty
// fields on top (RunInstances parameters override the template).
func mergeLTData(base, over ltData) ltData {
	out := base
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&out.ImageID, over.ImageID)
	set(&out.InstanceType, over.InstanceType)
	set(&out.UserData, over.UserData)
	set(&out.ProfileName, over.ProfileName)
	set(&out.ProfileARN, over.ProfileARN)
	set(&out.ReservationPreference, over.ReservationPreference)
	set(&out.ReservationID, over.ReservationID)
	set(&out.MarketType, over.MarketType)
	if len(over.SecurityGroupIDs) > 0 {
		out.SecurityGroupIDs = over.SecurityGroupIDs
	}
	if over.MetadataOptions != nil {
		out.MetadataOptions = over.MetadataOptions
	}
	if len(over.BlockDevices) > 0 {
		out.BlockDevices = over.BlockDevices
	}
	if len(over.NetworkInterfaces) > 0 {
		out.NetworkInterfaces = over.NetworkInterfaces
	}
	if len(over.TagSpecs) > 0 {
		out.TagSpecs = map[string]map[string]string{}
		for rt, t := range base.TagSpecs {
			out.TagSpecs[rt] = cloneTags(t)
		}
		for rt, t := range over.TagSpecs {
			if out.TagSpecs[rt] == nil {
				out.TagSpecs[rt] = map[string]string{}
			}
			for k, v := range t {
				out.TagSpecs[rt][k] = v
			}
		}
	}
	return out
}

type runInstancesXML struct {
	ReservationID string           `xml:"reservationId"`
	OwnerID       string           `xml:"ownerId"`
	InstancesSet  set[instanceXML] `xml:"instancesSet"`
}
