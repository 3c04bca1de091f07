package awsemu

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxFleetOverrides is the most launch-template overrides one CreateFleet
// request may carry (all configs together).
const MaxFleetOverrides = 300

// maxFleetLog bounds the recorded CreateFleet requests (the oldest half is
// dropped when it is reached).
const maxFleetLog = 4096

// fleetCandidate is one (launch template, override, subnet) a fleet could
// launch into.
type fleetCandidate struct {
	cfg, ovr     int // config and override index (0-based), for ordering
	lt           *launchTemplateRec
	ltSpec       ltSpecXML
	ovrXML       overridesXML
	instanceType *InstanceTypeInfo
	subnet       *subnetRec
	imageID      string
	maxPrice     float64 // 0 = none
	price        float64
	spare        int // spare-capacity score, set by chooseCandidate
	// priority is the override's Priority, +Inf when it has none (EC2: an
	// override without a priority has the lowest).
	priority float64
	// why the candidate cannot launch: error code and message, "" if it can.
	errCode, errMsg string
}

func (e *Emulator) createFleet(req *request) (any, *apiError) {
	p := req.params
	typ := p.Get("Type")
	if typ == "" {
		typ = "maintain"
	}
	if typ != "instant" {
		return nil, errInvalidParameterValue("Type", typ, "The emulator implements fleets of type instant only.")
	}
	tcs := p.Sub("TargetCapacitySpecification")
	total, ok, aerr := tcs.Int("TotalTargetCapacity")
	if aerr != nil {
		return nil, aerr
	}
	if !ok {
		return nil, errMissingParameter("TargetCapacitySpecification.TotalTargetCapacity")
	}
	if total < 1 || total > 1000 {
		return nil, errInvalidParameterValue("TargetCapacitySpecification.TotalTargetCapacity", strconv.FormatInt(total, 10), "Expecting a value between 1 and 1000.")
	}
	capType := tcs.Get("DefaultTargetCapacityType")
	switch capType {
	case "":
		capType = "on-demand"
	case "on-demand", "spot", MarketCapacityBlock:
	default:
		return nil, errInvalidParameterValue("TargetCapacitySpecification.DefaultTargetCapacityType", capType, "Valid values are on-demand, spot, capacity-block.")
	}
	if s := p.Get("SpotOptions.AllocationStrategy"); s != "" && !contains([]string{"lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized"}, s) {
		return nil, errInvalidParameterValue("SpotOptions.AllocationStrategy", s, "Valid values are lowest-price, diversified, capacity-optimized, capacity-optimized-prioritized, price-capacity-optimized.")
	}
	if s := p.Get("OnDemandOptions.AllocationStrategy"); s != "" && s != "lowest-price" && s != "prioritized" {
		return nil, errInvalidParameterValue("OnDemandOptions.AllocationStrategy", s, "Valid values are lowest-price, prioritized.")
	}
	configs := p.Items("LaunchTemplateConfigs")
	if len(configs) == 0 {
		return nil, errMissingParameter("LaunchTemplateConfigs")
	}
	tagSpecs, aerr := parseTagSpecs(p, "TagSpecification")
	if aerr != nil {
		return nil, aerr
	}
	for rt := range tagSpecs {
		if rt != "instance" && rt != "fleet" && rt != "volume" && rt != "network-interface" && rt != "spot-instances-request" {
			return nil, errInvalidParameterValue("TagSpecification.ResourceType", rt, "CreateFleet tags fleet, instance, volume, network-interface and spot-instances-request resources.")
		}
	}
	cands, aerr := e.fleetCandidates(configs, capType)
	if aerr != nil {
		return nil, aerr
	}

	fleet := &fleetRec{ID: fmt.Sprintf("fleet-%s", uuidFrom(e.rng.Uint64(), e.rng.Uint64())), Tags: tagSpecs["fleet"]}
	if fleet.Tags == nil {
		fleet.Tags = map[string]string{}
	}
	e.acct.fleets[fleet.ID] = fleet
	out := createFleetXML{FleetID: fleet.ID}

	// The allocation strategy of the capacity type picks among the
	// launchable candidates (see chooseCandidate).
	strategy := p.Get("OnDemandOptions.AllocationStrategy")
	applied := strategy
	if capType == "spot" {
		strategy = p.Get("SpotOptions.AllocationStrategy")
		applied = strategy
	}
	if applied == "" {
		applied = "lowest-price"
	}
	rec := FleetRequest{FleetID: fleet.ID, CapacityType: capType, AllocationStrategy: strategy, Applied: applied}
	var launchable []*fleetCandidate
	for i := range cands {
		c := &cands[i]
		rec.Overrides = append(rec.Overrides, FleetOverride{LaunchTemplateID: c.lt.ID, InstanceType: c.instanceType.Name,
			SubnetID: c.subnet.ID, Zone: c.subnet.Zone.Name, Priority: c.ovrXML.Priority})
		if c.errCode != "" {
			out.ErrorSet.Items = append(out.ErrorSet.Items, fleetErrorXML{
				LaunchTemplateAndOverrides: ltAndOverridesXML{LaunchTemplateSpecification: c.ltSpec, Overrides: c.ovrXML},
				Lifecycle:                  capType, ErrorCode: c.errCode, ErrorMessage: c.errMsg,
			})
			continue
		}
		launchable = append(launchable, c)
	}
	best := e.chooseCandidate(launchable, applied, capType)
	if best != nil {
		rec.InstanceType, rec.Zone = best.instanceType.Name, best.subnet.Zone.Name
	}
	if len(e.fleetLog) >= maxFleetLog {
		e.fleetLog = append(e.fleetLog[:0], e.fleetLog[len(e.fleetLog)-maxFleetLog/2:]...)
	}
	e.fleetLog = append(e.fleetLog, rec)
	if best == nil {
		return out, nil
	}
	now := e.clock.Now()
	reservation := e.newID("r")
	// The fleet fills its capacity from the chosen candidate; when that
	// one runs out (capacity, addresses, reservation) its error is
	// reported and the strategy picks the next among the rest, until the
	// capacity is met or nothing is left: fewer instances than asked, with
	// the errors of the offerings that ran out.
	remaining := total
	for best != nil {
		launched := fleetInstanceXML{
			LaunchTemplateAndOverrides: ltAndOverridesXML{LaunchTemplateSpecification: best.ltSpec, Overrides: best.ovrXML},
			Lifecycle:                  capType, InstanceType: best.instanceType.Name,
		}
		for remaining > 0 {
			in, aerr := e.launch(best, capType, tagSpecs["instance"], fleet.ID, reservation, now)
			if aerr != nil {
				out.ErrorSet.Items = append(out.ErrorSet.Items, fleetErrorXML{
					LaunchTemplateAndOverrides: launched.LaunchTemplateAndOverrides, Lifecycle: capType,
					ErrorCode: aerr.Code, ErrorMessage: aerr.Message,
				})
				break
			}
			launched.InstanceIDs.Items = append(launched.InstanceIDs.Items, valueXML{Value: in.ID})
			remaining--
		}
		if len(launched.InstanceIDs.Items) > 0 {
			out.FleetInstanceSet.Items = append(out.FleetInstanceSet.Items, launched)
		}
		if remaining == 0 {
			break
		}
		rest := launchable[:0:0]
		for _, c := range launchable {
			if c != best {
				rest = append(rest, c)
			}
		}
		launchable = rest
		best = e.chooseCandidate(launchable, applied, capType)
	}
	return out, nil
}

func lessCandidate(a, b *fleetCandidate) bool {
	if a.price != b.price {
		return a.price < b.price
	}
	if a.instanceType.Name != b.instanceType.Name {
		return a.instanceType.Name < b.instanceType.Name
	}
	if a.subnet.Zone.Name != b.subnet.Zone.Name {
		return a.subnet.Zone.Name < b.subnet.Zone.Name
	}
	if a.cfg != b.cfg {
		return a.cfg < b.cfg
	}
	return a.ovr < b.ovr
}

// fleetCandidates expands the request's launch-template configs into
// candidates and marks each that cannot launch (not offered, injected ICE,
// architecture mismatch, price above MaxPrice). Malformed requests (unknown
// template, subnet, type or image) fail as a whole.
func (e *Emulator) fleetCandidates(configs []params, capType string) ([]fleetCandidate, *apiError) {
	types := e.typeIndex
	var cands []fleetCandidate
	count := 0
	for ci, cfg := range configs {
		spec := cfg.Sub("LaunchTemplateSpecification")
		lt, aerr := e.findLaunchTemplate(spec.Get("LaunchTemplateId"), spec.Get("LaunchTemplateName"))
		if aerr != nil {
			return nil, aerr
		}
		version := spec.Get("Version")
		if version == "" {
			version = "$Default"
		}
		if version != "$Default" && version != "$Latest" && version != "1" {
			return nil, newAPIError("InvalidLaunchTemplateId.VersionNotFound", 400, "Could not find launch template version %s for launch template %s.", version, lt.ID)
		}
		ltSpec := ltSpecXML{LaunchTemplateID: lt.ID, Version: "1"}
		overrides := cfg.Items("Overrides")
		if len(overrides) == 0 {
			overrides = []params{newParams(nil)}
		}
		for oi, o := range overrides {
			count++
			if count > MaxFleetOverrides {
				return nil, errInvalidParameterValue("LaunchTemplateConfigs.Overrides", strconv.Itoa(count), fmt.Sprintf("A fleet request may carry at most %d overrides.", MaxFleetOverrides))
			}
			typeName := o.Get("InstanceType")
			if typeName == "" {
				typeName = lt.Data.InstanceType
			}
			if typeName == "" {
				return nil, errMissingParameter(fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides.%d.InstanceType", ci+1, oi+1))
			}
			it := types[typeName]
			if it == nil {
				return nil, errInvalidParameterValue("InstanceType", typeName, "The instance type does not exist.")
			}
			imageID := o.Get("ImageId")
			if imageID == "" {
				imageID = lt.Data.ImageID
			}
			if imageID == "" {
				return nil, errMissingParameter("ImageId (in the launch template or the override)")
			}
			img := e.acct.image(imageID)
			if img == nil {
				return nil, newAPIError("InvalidAMIID.NotFound", 400, "The image id '[%s]' does not exist", imageID)
			}
			var maxPrice float64
			if mp := o.Get("MaxPrice"); mp != "" {
				v, err := strconv.ParseFloat(mp, 64)
				if err != nil || v <= 0 {
					return nil, errInvalidParameterValue("MaxPrice", mp, "Expecting a positive decimal number.")
				}
				maxPrice = v
			}
			subnets, aerr := e.candidateSubnets(o, lt)
			if aerr != nil {
				return nil, aerr
			}
			// An override without a priority has the lowest (EC2's rule).
			priority, given := math.Inf(1), 0.0
			if v := o.Get("Priority"); v != "" {
				pv, err := strconv.ParseFloat(v, 64)
				if err != nil || pv < 0 {
					return nil, errInvalidParameterValue("Priority", v, "Expecting a non-negative number.")
				}
				priority, given = pv, pv
			}
			weight, _ := strconv.ParseFloat(o.Get("WeightedCapacity"), 64)
			for _, s := range subnets {
				c := fleetCandidate{
					cfg: ci, ovr: oi, lt: lt, ltSpec: ltSpec, instanceType: it, subnet: s, imageID: imageID, maxPrice: maxPrice, priority: priority,
					ovrXML: overridesXML{
						InstanceType: typeName, MaxPrice: o.Get("MaxPrice"), SubnetID: s.ID, AvailabilityZone: s.Zone.Name,
						WeightedCapacity: weight, Priority: given, ImageID: o.Get("ImageId"),
					},
				}
				e.judge(&c, img, capType)
				cands = append(cands, c)
			}
		}
	}
	return cands, nil
}

// candidateSubnets is the override's subnet, else a subnet in the
// override's zone, else the launch template's subnet, else every subnet.
func (e *Emulator) candidateSubnets(o params, lt *launchTemplateRec) ([]*subnetRec, *apiError) {
	id := o.Get("SubnetId")
	if id == "" {
		for _, ni := range lt.Data.NetworkInterfaces {
			if ni.SubnetID != "" {
				id = ni.SubnetID
				break
			}
		}
	}
	if id != "" {
		s := e.acct.subnet(id)
		if s == nil {
			return nil, notFoundIDs("subnet", "InvalidSubnetID.NotFound", []string{id})
		}
		if z := o.Get("AvailabilityZone"); z != "" && z != s.Zone.Name {
			return nil, errInvalidParameterCombination(fmt.Sprintf("The subnet %s is in %s, not in the requested availability zone %s.", s.ID, s.Zone.Name, z))
		}
		return []*subnetRec{s}, nil
	}
	if z := o.Get("AvailabilityZone"); z != "" {
		for _, s := range e.acct.subnets {
			if s.Zone.Name == z {
				return []*subnetRec{s}, nil
			}
		}
		return nil, errInvalidParameterValue("AvailabilityZone", z, "There is no subnet in that availability zone.")
	}
	return e.acct.subnets, nil
}

// judge prices a candidate and decides whether it can launch.
func (e *Emulator) judge(c *fleetCandidate, img *imageRec, capType string) {
	region, zone, t := e.opts.Region, c.subnet.Zone.Name, c.instanceType
	price, ok := e.catalog.OnDemandPrice(region, t.Name)
	if capType == "spot" {
		price, ok = e.catalog.SpotPrice(region, zone, t.Name)
	}
	if !ok {
		price = math.Inf(1)
	}
	c.price = price
	switch {
	case !t.HasArch(img.Architecture):
		c.errCode = "InvalidParameterValue"
		c.errMsg = fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.", strings.Join(t.Architectures, ","), img.Architecture)
	case !e.catalog.Offered(region, zone, t.Name) || !t.SupportsUsageClass(capType):
		c.errCode = "Unsupported"
		c.errMsg = fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s) as %s capacity.", t.Name, zone, capType)
	case e.faults.iced(t.Name, zone, capType):
		aerr := iceError(t.Name, zone, capType)
		c.errCode, c.errMsg = aerr.Code, aerr.Message
	case capType == "spot" && c.maxPrice > 0 && price > c.maxPrice:
		c.errCode = "SpotMaxPriceTooLow"
		c.errMsg = fmt.Sprintf("Your Spot request price of %g is lower than the minimum required Spot request fulfillment price of %g.", c.maxPrice, price)
	default:
		if _, aerr := e.reservationFor(c, capType); aerr != nil {
			c.errCode, c.errMsg = aerr.Code, aerr.Message
		}
	}
}

// iceError is EC2's insufficient-capacity answer for an offering.
func iceError(instanceType, zone, capType string) *apiError {
	if capType == "spot" {
		return newAPIError("InsufficientInstanceCapacity", 500, "There is no Spot capacity available that matches your request.")
	}
	return newAPIError("InsufficientInstanceCapacity", 500, "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity.", instanceType, zone)
}

// launch creates one instance from a candidate. Callers hold mu.
func (e *Emulator) launch(c *fleetCandidate, capType string, reqTags map[string]string, fleetID, reservation string, now time.Time) (*instanceRec, *apiError) {
	lt := c.lt
	cr, aerr := e.reservationFor(c, capType)
	if aerr != nil {
		return nil, aerr
	}
	if e.faults.iced(c.instanceType.Name, c.subnet.Zone.Name, capType) {
		// A LimitCapacity rule ran out during this request.
		return nil, iceError(c.instanceType.Name, c.subnet.Zone.Name, capType)
	}
	pg, partition, aerr := e.placementFor(lt.Data, c.subnet.Zone.Name)
	if aerr != nil {
		return nil, aerr
	}
	ip, ok := c.subnet.allocateIP()
	if !ok {
		return nil, newAPIError("InsufficientFreeAddressesInSubnet", 400, "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID)
	}
	e.faults.take(c.instanceType.Name, c.subnet.Zone.Name, capType)
	img := e.acct.image(c.imageID)
	tags := map[string]string{}
	for k, v := range lt.Data.TagSpecs["instance"] {
		tags[k] = v
	}
	for k, v := range reqTags {
		tags[k] = v
	}
	var userData string
	if lt.Data.UserData != "" {
		b, err := base64.StdEncoding.DecodeString(lt.Data.UserData)
		if err != nil {
			return nil, errInvalidParameterValue("UserData", "(launch template "+lt.Name+")", "User data must be base64-encoded.")
		}
		userData = string(b)
	}
	groups := append(append([]string{}, lt.Data.SecurityGroupIDs...), networkGroups(lt.Data.NetworkInterfaces)...)
	for _, n := range lt.Data.SecurityGroupNames {
		for _, g := range e.acct.securityGroups {
			if g.Name == n {
				groups = append(groups, g.ID)
			}
		}
	}
	if len(groups) == 0 {
		groups = []string{e.acct.securityGroups[0].ID}
	}
	mo := MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 2, HTTPTokens: "required", InstanceMetadataTags: "disabled"}
	if m := lt.Data.MetadataOptions; m != nil {
		if m.HTTPEndpoint != "" {
			mo.HTTPEndpoint = m.HTTPEndpoint
		}
		if m.HTTPProtocolIPv6 != "" {
			mo.HTTPProtocolIPv6 = m.HTTPProtocolIPv6
		}
		if m.HTTPPutResponseHopLimit != 0 {
			mo.HTTPPutResponseHopLimit = m.HTTPPutResponseHopLimit
		}
		if m.HTTPTokens != "" {
			mo.HTTPTokens = m.HTTPTokens
		}
		if m.InstanceMetadataTags != "" {
			mo.InstanceMetadataTags = m.InstanceMetadataTags
		}
	}
	bds := lt.Data.BlockDevices
	if len(bds) == 0 {
		bds = img.RootDevices
	}
	var profileARN string
	switch {
	case lt.Data.ProfileARN != "":
		if e.acct.profileByARN(lt.Data.ProfileARN) == nil {
			return nil, errInvalidParameterValue("IamInstanceProfile.Arn", lt.Data.ProfileARN, "Invalid IAM Instance Profile ARN")
		}
		profileARN = lt.Data.ProfileARN
	case lt.Data.ProfileName != "":
		prof := e.acct.profiles[lt.Data.ProfileName]
		if prof == nil {
			return nil, errInvalidParameterValue("IamInstanceProfile.Name", lt.Data.ProfileName, "Invalid IAM Instance Profile name")
		}
		profileARN = prof.ARN
	}
	in := &instanceRec{Instance: Instance{
		ID: e.newID("i"), InstanceType: c.instanceType.Name, Architecture: img.Architecture,
		Zone: c.subnet.Zone.Name, ZoneID: c.subnet.Zone.ID, SubnetID: c.subnet.ID, VPCID: c.subnet.VPCID,
		ImageID: img.ID, CapacityType: capType, Price: c.price, State: StatePending,
		PrivateIP: ip, PrivateDNSName: privateDNSName(e.opts.Region, ip),
		LaunchTime: now, StateChangeTime: now, Tags: tags, UserData: userData,
		SecurityGroupIDs: groups, MetadataOptions: mo, BlockDevices: append([]BlockDevice(nil), bds...),
		InstanceProfileARN: profileARN, LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name,
		FleetID: fleetID, ReservationID: reservation,
	}}
	if cr != nil {
		in.CapacityReservationID = cr.ID
	}
	if pg != nil {
		in.PlacementGroupName, in.PlacementGroupID, in.PartitionNumber = pg.Name, pg.ID, partition
	}
	if capType == "spot" {
		in.SpotRequestID = fmt.Sprintf("sir-%08x", uint32(e.rng.Uint64()))
	}
	e.acct.instances[in.ID] = in
	e.acct.order = append(e.acct.order, in.ID)
	boot := e.scaled(e.opts.BootDelay + time.Duration(e.rng.Int64N(int64(time.Second))))
	e.at(now.Add(boot), in.ID, timerBoot)
	e.publish(InstanceEvent{Instance: in.clone()})
	return in, nil
}
