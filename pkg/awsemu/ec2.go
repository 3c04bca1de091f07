package awsemu

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	ec2Version = "2016-11-15"
	ec2XMLNS   = "http://ec2.amazonaws.com/doc/2016-11-15/"
	// ec2Time is how EC2 formats timestamps.
	ec2Time = "2006-01-02T15:04:05.000Z"
)

type ec2Handler func(e *Emulator, req *request) (any, *apiError)

// ec2Ops are the EC2 operations the emulator implements. Each runs with
// e.mu held.
var ec2Ops = map[string]ec2Handler{
	"DescribeInstanceTypes":          (*Emulator).describeInstanceTypes,
	"DescribeInstanceTypeOfferings":  (*Emulator).describeInstanceTypeOfferings,
	"DescribeAvailabilityZones":      (*Emulator).describeAvailabilityZones,
	"DescribeVpcs":                   (*Emulator).describeVpcs,
	"DescribeSubnets":                (*Emulator).describeSubnets,
	"DescribeSecurityGroups":         (*Emulator).describeSecurityGroups,
	"DescribeImages":                 (*Emulator).describeImages,
	"DescribeSpotPriceHistory":       (*Emulator).describeSpotPriceHistory,
	"CreateLaunchTemplate":           (*Emulator).createLaunchTemplate,
	"DescribeLaunchTemplates":        (*Emulator).describeLaunchTemplates,
	"DeleteLaunchTemplate":           (*Emulator).deleteLaunchTemplate,
	"CreateFleet":                    idempotent((*Emulator).createFleet),
	"DescribeInstances":              (*Emulator).describeInstances,
	"TerminateInstances":             (*Emulator).terminateInstances,
	"RebootInstances":                (*Emulator).rebootInstances,
	"CreateTags":                     (*Emulator).createTags,
	"RunInstances":                   idempotent((*Emulator).runInstances),
	"DescribeInstanceStatus":         (*Emulator).describeInstanceStatus,
	"CreateCapacityReservation":      idempotent((*Emulator).createCapacityReservation),
	"DescribeCapacityReservations":   (*Emulator).describeCapacityReservations,
	"CancelCapacityReservation":      (*Emulator).cancelCapacityReservation,
	"DescribeCapacityBlockOfferings": (*Emulator).describeCapacityBlockOfferings,
	"PurchaseCapacityBlock":          (*Emulator).purchaseCapacityBlock,
	"CreatePlacementGroup":           (*Emulator).createPlacementGroup,
	"DescribePlacementGroups":        (*Emulator).describePlacementGroups,
	"DeletePlacementGroup":           (*Emulator).deletePlacementGroup,
}

func (e *Emulator) serveEC2(w http.ResponseWriter, req *request) {
	if req.action == "" {
		writeEC2Error(w, req, errMissingParameter("Action"))
		return
	}
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeEC2Error(w, req, aerr)
		return
	}
	h, ok := ec2Ops[req.action]
	if !ok {
		aerr := errInvalidAction("ec2", req.action)
		e.finish(req, aerr)
		writeEC2Error(w, req, aerr)
		return
	}
	if req.params.Bool("DryRun") {
		aerr := newAPIError("DryRunOperation", http.StatusPreconditionFailed, "Request would have succeeded, but DryRun flag is set.")
		e.finish(req, aerr)
		writeEC2Error(w, req, aerr)
		return
	}
	e.mu.Lock()
	out, aerr := h(e, req)
	e.mu.Unlock()
	e.poke()
	e.finish(req, aerr)
	if aerr != nil {
		writeEC2Error(w, req, aerr)
		return
	}
	writeEC2(w, req, out)
}

func writeEC2(w http.ResponseWriter, req *request, out any) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	start := xml.StartElement{
		Name: xml.Name{Local: req.action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2XMLNS}},
	}
	if err := enc.EncodeElement(out, start); err != nil {
		writeEC2Error(w, req, newAPIError("InternalError", 500, "encoding response: %v", err))
		return
	}
	// Put <requestId> first inside the root element, where EC2 puts it.
	b := buf.Bytes()
	i := bytes.Index(b, []byte(ec2XMLNS+`">`))
	var out2 bytes.Buffer
	if i >= 0 {
		i += len(ec2XMLNS) + 2
		out2.Write(b[:i])
		out2.WriteString("<requestId>" + req.requestID + "</requestId>")
		out2.Write(b[i:])
	} else {
		out2.Write(b)
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out2.Bytes())
}

func writeEC2Error(w http.ResponseWriter, req *request, aerr *apiError) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString("<Response><Errors><Error><Code>")
	_ = xml.EscapeText(&buf, []byte(aerr.Code))
	buf.WriteString("</Code><Message>")
	_ = xml.EscapeText(&buf, []byte(aerr.Message))
	buf.WriteString("</Message></Error></Errors><RequestID>" + req.requestID + "</RequestID></Response>")
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(aerr.status())
	_, _ = w.Write(buf.Bytes())
}

// ---- instance types and offerings ----

// regionTypes returns the catalog types offered in at least one zone of
// the region, sorted by name. Callers hold mu.
func (e *Emulator) regionTypes() []InstanceTypeInfo {
	var out []InstanceTypeInfo
	zones := e.catalog.Zones(e.opts.Region)
	for _, t := range e.catalog.InstanceTypes() {
		for _, z := range zones {
			if e.catalog.Offered(e.opts.Region, z.Name, t.Name) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

func (e *Emulator) describeInstanceTypes(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeInstanceTypes")
	if aerr != nil {
		return nil, aerr
	}
	types := e.regionTypes()
	if names := p.Strings("InstanceType"); len(names) > 0 {
		byName := map[string]InstanceTypeInfo{}
		for _, t := range types {
			byName[t.Name] = t
		}
		var missing []string
		var sel []InstanceTypeInfo
		for _, n := range names {
			if t, ok := byName[n]; ok {
				sel = append(sel, t)
			} else {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return nil, newAPIError("InvalidInstanceType", 400, "The following supplied instance types do not exist: [%s]", strings.Join(missing, ", "))
		}
		types = sel
	}
	var matched []InstanceTypeInfo
	for i := range types {
		t := &types[i]
		ok, aerr := matchUntagged(filters, instanceTypeFields(t))
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			matched = append(matched, *t)
		}
	}
	from, to, next := pg.slice("DescribeInstanceTypes", len(matched))
	out := describeInstanceTypesXML{NextToken: next}
	for _, t := range matched[from:to] {
		out.InstanceTypeSet.Items = append(out.InstanceTypeSet.Items, instanceTypeToXML(&t))
	}
	return out, nil
}

// instanceTypeFilters are the DescribeInstanceTypes filters the emulator
// answers, by name (all of them in botocore's model of the operation; see
// TestFiltersMatchBotocore).
var instanceTypeFilters = map[string]func(t *InstanceTypeInfo) []string{
	"instance-type": func(t *InstanceTypeInfo) []string {
		return []string{t.Name}
	},
	"processor-info.supported-architecture": func(t *InstanceTypeInfo) []string {
		return t.Architectures
	},
	"ebs-info.maximum-ebs-attachments": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.MaxEBSAttachments))}
	},
	"network-info.maximum-network-cards": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(max(1, len(t.NetworkCards)))}
	},
	"current-generation": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.CurrentGeneration)}
	},
	"bare-metal": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.BareMetal)}
	},
	"burstable-performance-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.Burstable)}
	},
	"hypervisor": func(t *InstanceTypeInfo) []string {
		return []string{t.Hypervisor}
	},
	"vcpu-info.default-vcpus": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.VCPU))}
	},
	"memory-info.size-in-mib": func(t *InstanceTypeInfo) []string {
		return []string{strconv.FormatInt(t.MemoryMiB, 10)}
	},
	"supported-usage-class": func(t *InstanceTypeInfo) []string {
		return t.UsageClasses
	},
	"instance-storage-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.InstanceStorage != nil)}
	},
	"network-info.efa-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.EFASupported)}
	},
	"network-info.ipv6-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.IPv6Supported)}
	},
	"free-tier-eligible": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.FreeTierEligible)}
	},
	"supported-virtualization-type": func(t *InstanceTypeInfo) []string {
		return t.VirtualizationTypes
	},
	"supported-root-device-type": func(t *InstanceTypeInfo) []string {
		return t.RootDeviceTypes
	},
	"supported-boot-mode": func(t *InstanceTypeInfo) []string {
		return t.BootModes
	},
	"hibernation-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.HibernationSupported)}
	},
	"dedicated-hosts-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.DedicatedHostsSupported)}
	},
	"auto-recovery-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.AutoRecoverySupported)}
	},
	"nitro-enclaves-support": func(t *InstanceTypeInfo) []string {
		return []string{t.NitroEnclavesSupport}
	},
	"nitro-tpm-support": func(t *InstanceTypeInfo) []string {
		return []string{t.NitroTPMSupport}
	},
	"ebs-info.ebs-optimized-support": func(t *InstanceTypeInfo) []string {
		return []string{t.EBSOptimizedSupport}
	},
	"ebs-info.encryption-support": func(t *InstanceTypeInfo) []string {
		return []string{"supported"}
	},
	"ebs-info.nvme-support": func(t *InstanceTypeInfo) []string {
		return []string{t.EBSNVMeSupport}
	},
	"instance-storage-info.total-size-in-gb": func(t *InstanceTypeInfo) []string {
		if t.InstanceStorage == nil {
			return nil
		}
		return []string{strconv.FormatInt(t.InstanceStorage.TotalGB, 10)}
	},
	"instance-storage-info.nvme-support": func(t *InstanceTypeInfo) []string {
		if t.InstanceStorage == nil {
			return nil
		}
		return []string{t.InstanceStorage.NVMeSupport}
	},
	"network-info.ena-support": func(t *InstanceTypeInfo) []string {
		return []string{t.ENASupport}
	},
	"network-info.encryption-in-transit-supported": func(t *InstanceTypeInfo) []string {
		return []string{boolStr(t.EncryptionInTransit)}
	},
	"network-info.maximum-network-interfaces": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.MaxENIs))}
	},
	"network-info.ipv4-addresses-per-interface": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.IPv4PerENI))}
	},
	"network-info.ipv6-addresses-per-interface": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.IPv6PerENI))}
	},
	"network-info.network-performance": func(t *InstanceTypeInfo) []string {
		return []string{t.NetworkPerformance}
	},
	"processor-info.sustained-clock-speed-in-ghz": func(t *InstanceTypeInfo) []string {
		return []string{strconv.FormatFloat(t.SustainedClockGHz, 'f', -1, 64)}
	},
	"vcpu-info.default-cores": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.DefaultCores))}
	},
	"vcpu-info.default-threads-per-core": func(t *InstanceTypeInfo) []string {
		return []string{strconv.Itoa(int(t.DefaultThreadsPerCore))}
	},
}

func instanceTypeFields(t *InstanceTypeInfo) fieldFunc {
	return func(name string) ([]string, bool) {
		f, ok := instanceTypeFilters[name]
		if !ok {
			return nil, false
		}
		return f(t), true
	}
}

func valueSet(vs []string) set[valueXML] {
	s := set[valueXML]{Items: make([]valueXML, 0, len(vs))}
	for _, v := range vs {
		s.Items = append(s.Items, valueXML{Value: v})
	}
	return s
}

func instanceTypeToXML(t *InstanceTypeInfo) instanceTypeXML {
	x := instanceTypeXML{
		InstanceType:                  t.Name,
		CurrentGeneration:             t.CurrentGeneration,
		FreeTierEligible:              t.FreeTierEligible,
		SupportedUsageClasses:         valueSet(t.UsageClasses),
		SupportedRootDeviceTypes:      valueSet(t.RootDeviceTypes),
		SupportedVirtualizationTypes:  valueSet(t.VirtualizationTypes),
		BareMetal:                     t.BareMetal,
		Hypervisor:                    t.Hypervisor,
		ProcessorInfo:                 processorInfoXML{SupportedArchitectures: valueSet(t.Architectures), SustainedClockSpeed: t.SustainedClockGHz, Manufacturer: t.Manufacturer},
		VCPUInfo:                      vcpuInfoXML{DefaultVCPUs: t.VCPU, DefaultCores: t.DefaultCores, DefaultThreadsPerCore: t.DefaultThreadsPerCore},
		MemoryInfo:                    memoryInfoXML{SizeInMiB: t.MemoryMiB},
		InstanceStorageSupported:      t.InstanceStorage != nil,
		EBSInfo:                       ebsInfoXML{EBSOptimizedSupport: t.EBSOptimizedSupport, EncryptionSupport: "supported", NVMeSupport: t.EBSNVMeSupport, MaximumEBSAttachments: t.MaxEBSAttachments},
		PlacementGroupInfo:            placementGroupInfoXML{SupportedStrategies: valueSet(t.PlacementStrategies)},
		HibernationSupported:          t.HibernationSupported,
		BurstablePerformanceSupported: t.Burstable,
		DedicatedHostsSupported:       t.DedicatedHostsSupported,
		AutoRecoverySupported:         t.AutoRecoverySupported,
		SupportedBootModes:            valueSet(t.BootModes),
		NitroEnclavesSupport:          t.NitroEnclavesSupport,
		NitroTPMSupport:               t.NitroTPMSupport,
	}
	cards := t.NetworkCards
	if len(cards) == 0 {
		cards = []NetworkCard{{Index: 0, MaxENIs: t.MaxENIs, NetworkPerformance: t.NetworkPerformance}}
	}
	x.NetworkInfo = networkInfoXML{
		NetworkPerformance:        t.NetworkPerformance,
		MaximumNetworkInterfaces:  t.MaxENIs,
		MaximumNetworkCards:       int32(len(cards)),
		DefaultNetworkCardIndex:   t.DefaultNetworkCard,
		IPv4AddressesPerInterface: t.IPv4PerENI,
		IPv6AddressesPerInterface: t.IPv6PerENI,
		IPv6Supported:             t.IPv6Supported,
		ENASupport:                t.ENASupport,
		EFASupported:              t.EFASupported,
		EncryptionInTransit:       t.EncryptionInTransit,
	}
	if t.EFASupported && t.EFAInterfaces > 0 {
		x.NetworkInfo.EFAInfo = &efaInfoXML{MaximumEFAInterfaces: t.EFAInterfaces}
	}
	for _, c := range cards {
		x.NetworkInfo.NetworkCards.Items = append(x.NetworkInfo.NetworkCards.Items, networkCardXML{
			NetworkCardIndex: c.Index, NetworkPerformance: c.NetworkPerformance, MaximumNetworkInterfaces: c.MaxENIs,
			BaselineBandwidthInGbps: c.BaselineGbps, PeakBandwidthInGbps: c.PeakGbps,
		})
	}
	if s := t.InstanceStorage; s != nil {
		x.InstanceStorageInfo = &instanceStorageInfoXML{TotalSizeInGB: s.TotalGB, NVMeSupport: s.NVMeSupport}
		for _, d := range s.Disks {
			x.InstanceStorageInfo.Disks.Items = append(x.InstanceStorageInfo.Disks.Items, diskXML{SizeInGB: d.SizeGB, Count: d.Count, Type: d.Type})
		}
	}
	// Fractional-GPU types (g6f, gr6f) report their GPU with count 0, as
	// EC2 does; keep it so name/manufacturer/memory labels survive.
	if g := t.GPU; g != nil {
		x.GPUInfo = &gpuInfoXML{TotalGPUMemoryInMiB: g.MemoryMiB * g.Count}
		x.GPUInfo.GPUs.Items = []gpuDeviceXML{{Name: g.Name, Manufacturer: g.Manufacturer, Count: g.Count, MemoryInfo: memoryInfo32{SizeInMiB: g.MemoryMiB}}}
	}
	if a := t.Accelerators; a != nil && a.Count > 0 {
		switch a.Kind {
		case "neuron":
			dev := neuronDeviceXML{Count: a.Count, Name: a.Name, MemoryInfo: memoryInfo32{SizeInMiB: a.MemoryMiB}}
			if a.CoresPerDevice > 0 {
				dev.CoreInfo = &neuronCoreXML{Count: a.CoresPerDevice, Version: 2}
			}
			x.NeuronInfo = &neuronInfoXML{TotalNeuronDeviceMemoryInMiB: a.MemoryMiB * a.Count}
			x.NeuronInfo.NeuronDevices.Items = []neuronDeviceXML{dev}
		default:
			x.InferenceAcceleratorInfo = &inferenceInfoXML{TotalMemory: a.MemoryMiB * a.Count}
			x.InferenceAcceleratorInfo.Accelerators.Items = []inferenceDeviceXML{{Count: a.Count, Name: a.Name, Manufacturer: a.Manufacturer, MemoryInfo: memoryInfo32{SizeInMiB: a.MemoryMiB}}}
		}
	}
	return x
}

func (e *Emulator) describeInstanceTypeOfferings(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeInstanceTypeOfferings")
	if aerr != nil {
		return nil, aerr
	}
	locType := p.Get("LocationType")
	if locType == "" {
		locType = "region"
	}
	region := e.opts.Region
	zones := e.catalog.Zones(region)
	var all []offeringXML
	switch locType {
	case "region":
		for _, t := range e.regionTypes() {
			all = append(all, offeringXML{InstanceType: t.Name, LocationType: locType, Location: region})
		}
	case "availability-zone", "availability-zone-id":
		for _, z := range zones {
			loc := z.Name
			if locType == "availability-zone-id" {
				loc = z.ID
			}
			for _, t := range e.catalog.InstanceTypes() {
				if e.catalog.Offered(region, z.Name, t.Name) {
					all = append(all, offeringXML{InstanceType: t.Name, LocationType: locType, Location: loc})
				}
			}
		}
	default:
		return nil, errInvalidParameterValue("LocationType", locType, "Valid values are region, availability-zone, availability-zone-id, outpost.")
	}
	var matched []offeringXML
	for _, o := range all {
		o := o
		ok, aerr := matchUntagged(filters, func(name string) ([]string, bool) {
			switch name {
			case "location":
				return []string{o.Location}, true
			case "instance-type":
				return []string{o.InstanceType}, true
			}
			return nil, false
		})
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			matched = append(matched, o)
		}
	}
	from, to, next := pg.slice("DescribeInstanceTypeOfferings", len(matched))
	return describeInstanceTypeOfferingsXML{InstanceTypeOfferingSet: set[offeringXML]{Items: matched[from:to]}, NextToken: next}, nil
}

func (e *Emulator) describeAvailabilityZones(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	region := e.opts.Region
	zones := e.catalog.Zones(region)
	names, ids := p.Strings("ZoneName"), p.Strings("ZoneId")
	known := map[string]bool{}
	for _, z := range zones {
		known[z.Name], known[z.ID] = true, true
	}
	for _, n := range append(append([]string{}, names...), ids...) {
		if !known[n] {
			return nil, errInvalidParameterValue("ZoneName", n, fmt.Sprintf("Invalid availability zone: [%s]", n))
		}
	}
	out := describeAvailabilityZonesXML{AvailabilityZoneInfo: set[zoneXML]{Items: []zoneXML{}}}
	for _, z := range zones {
		if (len(names) > 0 || len(ids) > 0) && !contains(names, z.Name) && !contains(ids, z.ID) {
			continue
		}
		x := zoneXML{
			ZoneName: z.Name, ZoneState: "available", RegionName: region, ZoneID: z.ID, ZoneType: "availability-zone",
			OptInStatus: "opt-in-not-required", GroupName: region, NetworkBorderGroup: region,
		}
		ok, aerr := matchUntagged(filters, func(name string) ([]string, bool) {
			switch name {
			case "zone-name":
				return []string{x.ZoneName}, true
			case "zone-id":
				return []string{x.ZoneID}, true
			case "region-name":
				return []string{region}, true
			case "state":
				return []string{x.ZoneState}, true
			case "zone-type":
				return []string{x.ZoneType}, true
			case "group-name":
				return []string{x.GroupName}, true
			case "opt-in-status":
				return []string{x.OptInStatus}, true
			}
			return nil, false
		})
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			out.AvailabilityZoneInfo.Items = append(out.AvailabilityZoneInfo.Items, x)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ---- network ----

func (e *Emulator) describeVpcs(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeVpcs")
	if aerr != nil {
		return nil, aerr
	}
	v := e.acct.vpc
	if ids := p.Strings("VpcId"); len(ids) > 0 {
		for _, id := range ids {
			if id != v.ID {
				return nil, newAPIError("InvalidVpcID.NotFound", 400, "The vpc ID '%s' does not exist", id)
			}
		}
	}
	ok, aerr := matchFilters(filters, v.Tags, func(name string) ([]string, bool) {
		switch name {
		case "vpc-id":
			return []string{v.ID}, true
		case "cidr", "cidr-block-association.cidr-block":
			return []string{v.CIDR}, true
		case "state":
			return []string{"available"}, true
		case "is-default":
			return []string{"false"}, true
		case "owner-id":
			return []string{e.opts.AccountID}, true
		}
		return nil, false
	})
	if aerr != nil {
		return nil, aerr
	}
	var items []vpcXML
	if ok {
		items = append(items, vpcXML{VPCID: v.ID, OwnerID: e.opts.AccountID, State: "available", CIDRBlock: v.CIDR,
			DHCPOptionsID: "dopt-0" + v.ID[5:], InstanceTenancy: "default", TagSet: tagSet(v.Tags)})
	}
	from, to, next := pg.slice("DescribeVpcs", len(items))
	return describeVpcsXML{VPCSet: set[vpcXML]{Items: items[from:to]}, NextToken: next}, nil
}

var (
	subnetIDRe = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	sgIDRe     = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
	amiIDRe    = regexp.MustCompile(`^ami-[0-9a-f]{8,17}$`)
	instIDRe   = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)
	ltIDRe     = regexp.MustCompile(`^lt-[0-9a-f]{8,17}$`)
	ltNameRe   = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)
)

func notFoundIDs(kind, code string, ids []string) *apiError {
	if len(ids) == 1 {
		return newAPIError(code, 400, "The %s ID '%s' does not exist", kind, ids[0])
	}
	return newAPIError(code, 400, "The %s IDs '%s' do not exist", kind, strings.Join(ids, ", "))
}

func (e *Emulator) describeSubnets(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeSubnets")
	if aerr != nil {
		return nil, aerr
	}
	ids := p.Strings("SubnetId")
	var missing []string
	for _, id := range ids {
		if !subnetIDRe.MatchString(id) {
			return nil, newAPIError("InvalidSubnetID.Malformed", 400, "Invalid id: \"%s\" (expecting \"subnet-...\")", id)
		}
		if e.acct.subnet(id) == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, notFoundIDs("subnet", "InvalidSubnetID.NotFound", missing)
	}
	var items []subnetXML
	for _, s := range e.acct.subnets {
		if len(ids) > 0 && !contains(ids, s.ID) {
			continue
		}
		s := s
		free := s.freeAddresses()
		ok, aerr := matchFilters(filters, s.Tags, func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{s.ID}, true
			case "vpc-id":
				return []string{s.VPCID}, true
			case "availability-zone", "availabilityZone":
				return []string{s.Zone.Name}, true
			case "availability-zone-id", "availabilityZoneId":
				return []string{s.Zone.ID}, true
			case "cidr-block", "cidr", "cidrBlock":
				return []string{s.CIDR}, true
			case "state":
				return []string{"available"}, true
			case "default-for-az", "defaultForAz":
				return []string{"false"}, true
			case "owner-id":
				return []string{e.opts.AccountID}, true
			case "map-public-ip-on-launch":
				return []string{boolStr(s.Public)}, true
			}
			return nil, false
		})
		if aerr != nil {
			return nil, aerr
		}
		if !ok {
			continue
		}
		items = append(items, subnetXML{
			SubnetID: s.ID, SubnetArn: fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", e.opts.Region, e.opts.AccountID, s.ID),
			State: "available", VPCID: s.VPCID, OwnerID: e.opts.AccountID, CIDRBlock: s.CIDR,
			AvailableIPAddressCount: free, AvailabilityZone: s.Zone.Name, AvailabilityZoneID: s.Zone.ID,
			MapPublicIPOnLaunch: s.Public, TagSet: tagSet(s.Tags),
		})
	}
	from, to, next := pg.slice("DescribeSubnets", len(items))
	return describeSubnetsXML{SubnetSet: set[subnetXML]{Items: items[from:to]}, NextToken: next}, nil
}

func (e *Emulator) describeSecurityGroups(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeSecurityGroups")
	if aerr != nil {
		return nil, aerr
	}
	ids, names := p.Strings("GroupId"), p.Strings("GroupName")
	var missing []string
	for _, id := range ids {
		if !sgIDRe.MatchString(id) {
			return nil, newAPIError("InvalidGroupId.Malformed", 400, "Invalid id: \"%s\" (expecting \"sg-...\")", id)
		}
		if e.acct.securityGroup(id) == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, newAPIError("InvalidGroup.NotFound", 400, "The security group '%s' does not exist", strings.Join(missing, "', '"))
	}
	for _, n := range names {
		found := false
		for _, g := range e.acct.securityGroups {
			found = found || g.Name == n
		}
		if !found {
			return nil, newAPIError("InvalidGroup.NotFound", 400, "The security group '%s' does not exist in default VPC '%s'", n, e.acct.vpc.ID)
		}
	}
	var items []securityGroupXML
	for _, g := range e.acct.securityGroups {
		if len(ids) > 0 && !contains(ids, g.ID) {
			continue
		}
		if len(names) > 0 && !contains(names, g.Name) {
			continue
		}
		g := g
		ok, aerr := matchFilters(filters, g.Tags, func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{g.ID}, true
			case "group-name":
				return []string{g.Name}, true
			case "vpc-id":
				return []string{g.VPCID}, true
			case "description":
				return []string{g.Description}, true
			case "owner-id":
				return []string{e.opts.AccountID}, true
			}
			return nil, false
		})
		if aerr != nil {
			return nil, aerr
		}
		if !ok {
			continue
		}
		items = append(items, securityGroupXML{
			OwnerID: e.opts.AccountID, GroupID: g.ID, GroupName: g.Name, GroupDescription: g.Description, VPCID: g.VPCID,
			SecurityGroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", e.opts.Region, e.opts.AccountID, g.ID),
			TagSet:           tagSet(g.Tags),
		})
	}
	from, to, next := pg.slice("DescribeSecurityGroups", len(items))
	return describeSecurityGroupsXML{SecurityGroupInfo: set[securityGroupXML]{Items: items[from:to]}, NextToken: next}, nil
}

// ---- images and prices ----

func (e *Emulator) describeImages(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeImages")
	if aerr != nil {
		return nil, aerr
	}
	ids, owners := p.Strings("ImageId"), p.Strings("Owner")
	var missing []string
	for _, id := range ids {
		if !amiIDRe.MatchString(id) {
			return nil, newAPIError("InvalidAMIID.Malformed", 400, "Invalid id: \"%s\" (expecting \"ami-...\")", id)
		}
		if e.acct.image(id) == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, newAPIError("InvalidAMIID.NotFound", 400, "The image id '[%s]' does not exist", strings.Join(missing, ", "))
	}
	var items []imageXML
	for _, img := range e.acct.images {
		if len(ids) > 0 && !contains(ids, img.ID) {
			continue
		}
		if len(owners) > 0 && !contains(owners, img.OwnerID) && !contains(owners, img.OwnerAlias) &&
			!(contains(owners, "self") && img.OwnerID == e.opts.AccountID) {
			continue
		}
		img := img
		ok, aerr := matchFilters(filters, img.Tags, func(name string) ([]string, bool) {
			switch name {
			case "image-id":
				return []string{img.ID}, true
			case "name":
				return []string{img.Name}, true
			case "owner-id":
				return []string{img.OwnerID}, true
			case "owner-alias":
				return []string{img.OwnerAlias}, true
			case "architecture":
				return []string{img.Architecture}, true
			case "state":
				return []string{"available"}, true
			case "is-public":
				return []string{"true"}, true
			case "image-type":
				return []string{"machine"}, true
			case "description":
				return []string{img.Description}, true
			case "root-device-type":
				return []string{"ebs"}, true
			case "virtualization-type":
				return []string{"hvm"}, true
			case "hypervisor":
				return []string{"xen"}, true
			}
			return nil, false
		})
		if aerr != nil {
			return nil, aerr
		}
		if !ok {
			continue
		}
		items = append(items, e.imageToXML(img))
	}
	from, to, next := pg.slice("DescribeImages", len(items))
	return describeImagesXML{ImagesSet: set[imageXML]{Items: items[from:to]}, NextToken: next}, nil
}

func (e *Emulator) imageToXML(img *imageRec) imageXML {
	x := imageXML{
		ImageID: img.ID, ImageLocation: img.OwnerAlias + "/" + img.Name, ImageState: "available",
		ImageOwnerID: img.OwnerID, CreationDate: img.CreationDate.UTC().Format(ec2Time), IsPublic: true,
		Architecture: img.Architecture, ImageType: "machine", ImageOwnerAlias: img.OwnerAlias, Name: img.Name,
		Description: img.Description, RootDeviceType: "ebs", RootDeviceName: "/dev/xvda",
		VirtualizationType: "hvm", Hypervisor: "xen", ENASupport: true, PlatformDetails: "Linux/UNIX",
		UsageOperation: "RunInstances", BootMode: "uefi-preferred", ImdsSupport: "v2.0",
		DeprecationTime: img.CreationDate.AddDate(2, 0, 0).UTC().Format(ec2Time),
		TagSet:          optTagSet(img.Tags),
	}
	for _, bd := range img.RootDevices {
		x.BlockDeviceMapping.Items = append(x.BlockDeviceMapping.Items, blockDeviceXML{DeviceName: bd.DeviceName, EBS: &ebsBlockXML{
			SnapshotID: "snap-0" + img.ID[5:], VolumeSize: bd.VolumeSizeGiB, DeleteOnTermination: bd.DeleteOnTermination,
			VolumeType: bd.VolumeType, IOPS: 3000, Throughput: 125, Encrypted: ptrTo(false),
		}})
	}
	return x
}

// Spot price product descriptions EC2 accepts.
var productDescriptions = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

func (e *Emulator) describeSpotPriceHistory(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeSpotPriceHistory")
	if aerr != nil {
		return nil, aerr
	}
	types := p.Strings("InstanceType")
	products := p.Strings("ProductDescription")
	for _, pd := range products {
		if !contains(append(productDescriptions, "Windows", "Windows (Amazon VPC)", "SUSE Linux", "Red Hat Enterprise Linux"), pd) {
			return nil, errInvalidParameterValue("ProductDescription", pd, "Unknown product description.")
		}
	}
	if len(products) == 0 {
		products = productDescriptions
	}
	zoneFilter := p.Get("AvailabilityZone")
	region := e.opts.Region
	// One current price per (zone, type, product), stamped with the start
	// of the current hour: prices in the emulator do not move.
	stamp := e.clock.Now().UTC().Truncate(time.Hour).Format(ec2Time)
	var items []spotPriceXML
	for _, t := range e.catalog.InstanceTypes() {
		if len(types) > 0 && !contains(types, t.Name) {
			continue
		}
		if !t.SupportsUsageClass("spot") {
			continue
		}
		for _, z := range e.catalog.Zones(region) {
			if zoneFilter != "" && zoneFilter != z.Name {
				continue
			}
			if !e.catalog.Offered(region, z.Name, t.Name) {
				continue
			}
			price, ok := e.catalog.SpotPrice(region, z.Name, t.Name)
			if !ok {
				continue
			}
			for _, pd := range products {
				if !contains(productDescriptions, pd) {
					continue // no Windows/SUSE/RHEL spot prices in the catalog
				}
				x := spotPriceXML{
					InstanceType: t.Name, ProductDescription: pd, SpotPrice: strconv.FormatFloat(price, 'f', 6, 64),
					Timestamp: stamp, AvailabilityZone: z.Name, AvailabilityZoneID: z.ID,
				}
				ok, aerr := matchUntagged(filters, func(name string) ([]string, bool) {
					switch name {
					case "availability-zone":
						return []string{x.AvailabilityZone}, true
					case "availability-zone-id":
						return []string{x.AvailabilityZoneID}, true
					case "instance-type":
						return []string{x.InstanceType}, true
					case "product-description":
						return []string{x.ProductDescription}, true
					case "spot-price":
						return []string{x.SpotPrice}, true
					case "timestamp":
						return []string{x.Timestamp}, true
					}
					return nil, false
				})
				if aerr != nil {
					return nil, aerr
				}
				if ok {
					items = append(items, x)
				}
			}
		}
	}
	from, to, next := pg.slice("DescribeSpotPriceHistory", len(items))
	return describeSpotPriceHistoryXML{SpotPriceHistorySet: set[spotPriceXML]{Items: items[from:to]}, NextToken: next}, nil
}

// ---- tags ----

// parseTagSpecs reads TagSpecification.N.{ResourceType, Tag.M.{Key,Value}}.
func parseTagSpecs(p params, key string) (map[string]map[string]string, *apiError) {
	out := map[string]map[string]string{}
	for i, ts := range p.Items(key) {
		rt := ts.Get("ResourceType")
		if rt == "" {
			return nil, errMissingParameter(fmt.Sprintf("%s.%d.ResourceType", key, i+1))
		}
		tags, aerr := parseTags(ts, "Tag")
		if aerr != nil {
			return nil, aerr
		}
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range tags {
			out[rt][k] = v
		}
	}
	return out, nil
}

func parseTags(p params, key string) (map[string]string, *apiError) {
	tags := map[string]string{}
	for i, t := range p.Items(key) {
		k := t.Get("Key")
		if k == "" {
			return nil, errMissingParameter(fmt.Sprintf("%s.%d.Key", key, i+1))
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, errInvalidParameterValue("Tag.Key", k, "Tag keys starting with 'aws:' are reserved for internal use")
		}
		if len(k) > 128 {
			return nil, errInvalidParameterValue("Tag.Key", k, "Tag keys must be at most 128 characters long.")
		}
		if len(t.Get("Value")) > 256 {
			return nil, errInvalidParameterValue("Tag.Value", t.Get("Value"), "Tag values must be at most 256 characters long.")
		}
		tags[k] = t.Get("Value")
	}
	if len(tags) > 50 {
		return nil, newAPIError("TagLimitExceeded", 400, "The maximum number of tags (50) for a resource has been reached.")
	}
	return tags, nil
}

func (e *Emulator) createTags(req *request) (any, *apiError) {
	p := req.params
	ids := p.Strings("ResourceId")
	if len(ids) == 0 {
		return nil, errMissingParameter("ResourceId")
	}
	tags, aerr := parseTags(p, "Tag")
	if aerr != nil {
		return nil, aerr
	}
	// Resolve everything first: CreateTags is all or nothing.
	var targets []map[string]string
	var setters []func(map[string]string)
	for _, id := range ids {
		prefix, _, _ := strings.Cut(id, "-")
		switch prefix {
		case "i":
			in := e.acct.instances[id]
			if in == nil {
				return nil, notFoundIDs("instance", "InvalidInstanceID.NotFound", []string{id})
			}
			targets = append(targets, in.Tags)
			setters = append(setters, func(m map[string]string) { in.Tags = m })
		case "lt":
			lt := e.acct.launchTemplates[id]
			if lt == nil {
				return nil, newAPIError("InvalidLaunchTemplateId.NotFound", 400, "The specified launch template, with template ID %s, does not exist.", id)
			}
			targets = append(targets, lt.Tags)
			setters = append(setters, func(m map[string]string) { lt.Tags = m })
		case "subnet":
			s := e.acct.subnet(id)
			if s == nil {
				return nil, notFoundIDs("subnet", "InvalidSubnetID.NotFound", []string{id})
			}
			targets = append(targets, s.Tags)
			setters = append(setters, func(m map[string]string) { s.Tags = m })
		case "sg":
			g := e.acct.securityGroup(id)
			if g == nil {
				return nil, newAPIError("InvalidGroup.NotFound", 400, "The security group '%s' does not exist", id)
			}
			targets = append(targets, g.Tags)
			setters = append(setters, func(m map[string]string) { g.Tags = m })
		case "ami":
			img := e.acct.image(id)
			if img == nil {
				return nil, newAPIError("InvalidAMIID.NotFound", 400, "The image id '[%s]' does not exist", id)
			}
			targets = append(targets, img.Tags)
			setters = append(setters, func(m map[string]string) { img.Tags = m })
		case "fleet":
			f := e.acct.fleets[id]
			if f == nil {
				return nil, newAPIError("InvalidFleetId.NotFound", 400, "The fleet ID '%s' does not exist", id)
			}
			targets = append(targets, f.Tags)
			setters = append(setters, func(m map[string]string) { f.Tags = m })
		case "vpc":
			if id != e.acct.vpc.ID {
				return nil, newAPIError("InvalidVpcID.NotFound", 400, "The vpc ID '%s' does not exist", id)
			}
			targets = append(targets, e.acct.vpc.Tags)
			setters = append(setters, func(m map[string]string) { e.acct.vpc.Tags = m })
		default:
			return nil, newAPIError("InvalidID", 400, "The ID '%s' is not valid", id)
		}
	}
	for i, cur := range targets {
		merged := cloneTags(cur)
		if merged == nil {
			merged = map[string]string{}
		}
		for k, v := range tags {
			merged[k] = v
		}
		if len(merged) > 50 {
			return nil, newAPIError("TagLimitExceeded", 400, "The maximum number of tags (50) for resource %s has been reached.", ids[i])
		}
		targets[i] = merged
	}
	for i, set := range setters {
		set(targets[i])
	}
	return returnXML{Return: true}, nil
}

// ---- launch templates ----

func (e *Emulator) createLaunchTemplate(req *request) (any, *apiError) {
	p := req.params
	name := p.Get("LaunchTemplateName")
	if name == "" {
		return nil, errMissingParameter("LaunchTemplateName")
	}
	if !ltNameRe.MatchString(name) {
		return nil, errInvalidParameterValue("LaunchTemplateName", name, "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.")
	}
	if _, dup := e.acct.ltByName[name]; dup {
		return nil, newAPIError("InvalidLaunchTemplateName.AlreadyExistsException", 400, "Launch template name already in use.")
	}
	if !p.Has("LaunchTemplateData") {
		return nil, errMissingParameter("LaunchTemplateData")
	}
	data, aerr := e.parseLTData(p.Sub("LaunchTemplateData"))
	if aerr != nil {
		return nil, aerr
	}
	specs, aerr := parseTagSpecs(p, "TagSpecification")
	if aerr != nil {
		return nil, aerr
	}
	for rt := range specs {
		if rt != "launch-template" {
			return nil, errInvalidParameterValue("TagSpecification.ResourceType", rt, "CreateLaunchTemplate tags only the launch-template resource type.")
		}
	}
	lt := &launchTemplateRec{ID: e.newID("lt"), Name: name, CreateTime: e.clock.Now(), Tags: specs["launch-template"], Data: data}
	if lt.Tags == nil {
		lt.Tags = map[string]string{}
	}
	e.acct.launchTemplates[lt.ID] = lt
	e.acct.ltByName[name] = lt
	return launchTemplateResultXML{LaunchTemplate: e.ltToXML(lt)}, nil
}

func (e *Emulator) ltToXML(lt *launchTemplateRec) launchTemplateXML {
	return launchTemplateXML{
		LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, CreateTime: lt.CreateTime.UTC().Format(ec2Time),
		CreatedBy: fmt.Sprintf("arn:aws:iam::%s:root", e.opts.AccountID), DefaultVersionNumber: 1, LatestVersionNumber: 1,
		TagSet: optTagSet(lt.Tags),
	}
}

func (e *Emulator) parseLTData(d params) (ltData, *apiError) {
	data := ltData{
		ImageID:            d.Get("ImageId"),
		InstanceType:       d.Get("InstanceType"),
		UserData:           d.Get("UserData"),
		SecurityGroupIDs:   d.Strings("SecurityGroupId"),
		SecurityGroupNames: d.Strings("SecurityGroup"),
		ProfileName:        d.Get("IamInstanceProfile.Name"),
		ProfileARN:         d.Get("IamInstanceProfile.Arn"),
		Monitoring:         d.Bool("Monitoring.Enabled"),

		ReservationPreference: d.Get("CapacityReservationSpecification.CapacityReservationPreference"),
		ReservationID:         d.Get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
		MarketType:            d.Get("InstanceMarketOptions.MarketType"),
	}
	if v := data.MarketType; v != "" && v != "spot" && v != MarketCapacityBlock {
		return data, errInvalidParameterValue("InstanceMarketOptions.MarketType", v, "Valid values are spot, capacity-block.")
	}
	if v := data.ReservationPreference; v != "" && v != prefOpen && v != prefNone && v != prefOnly {
		return data, errInvalidParameterValue("CapacityReservationSpecification.CapacityReservationPreference", v, "Valid values are capacity-reservations-only, open, none.")
	}
	if data.ImageID != "" && !amiIDRe.MatchString(data.ImageID) && !strings.HasPrefix(data.ImageID, "resolve:ssm:") {
		return data, newAPIError("InvalidAMIID.Malformed", 400, "Invalid id: \"%s\" (expecting \"ami-...\")", data.ImageID)
	}
	if d.Has("MetadataOptions") {
		m := d.Sub("MetadataOptions")
		mo := MetadataOptions{
			HTTPEndpoint: m.Get("HttpEndpoint"), HTTPProtocolIPv6: m.Get("HttpProtocolIpv6"),
			HTTPTokens: m.Get("HttpTokens"), InstanceMetadataTags: m.Get("InstanceMetadataTags"),
		}
		if n, ok, aerr := m.Int("HttpPutResponseHopLimit"); aerr != nil {
			return data, aerr
		} else if ok {
			if n < 1 || n > 64 {
				return data, errInvalidParameterValue("LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit", strconv.FormatInt(n, 10), "Expecting a value between 1 and 64.")
			}
			mo.HTTPPutResponseHopLimit = n
		}
		for field, v := range map[string]string{"HttpEndpoint": mo.HTTPEndpoint, "HttpProtocolIpv6": mo.HTTPProtocolIPv6, "InstanceMetadataTags": mo.InstanceMetadataTags} {
			if v != "" && v != "enabled" && v != "disabled" {
				return data, errInvalidParameterValue("LaunchTemplateData.MetadataOptions."+field, v, "Valid values are enabled, disabled.")
			}
		}
		if mo.HTTPTokens != "" && mo.HTTPTokens != "required" && mo.HTTPTokens != "optional" {
			return data, errInvalidParameterValue("LaunchTemplateData.MetadataOptions.HttpTokens", mo.HTTPTokens, "Valid values are required, optional.")
		}
		data.MetadataOptions = &mo
	}
	for i, b := range d.Items("BlockDeviceMapping") {
		bd := BlockDevice{DeviceName: b.Get("DeviceName")}
		if bd.DeviceName == "" {
			return data, errMissingParameter(fmt.Sprintf("LaunchTemplateData.BlockDeviceMapping.%d.DeviceName", i+1))
		}
		ebs := b.Sub("Ebs")
		for _, f := range []struct {
			key string
			dst *int64
		}{{"VolumeSize", &bd.VolumeSizeGiB}, {"Iops", &bd.IOPS}, {"Throughput", &bd.Throughput}} {
			n, _, aerr := ebs.Int(f.key)
			if aerr != nil {
				return data, aerr
			}
			*f.dst = n
		}
		bd.VolumeType = ebs.Get("VolumeType")
		if bd.VolumeType != "" && !contains([]string{"standard", "io1", "io2", "gp2", "gp3", "sc1", "st1"}, bd.VolumeType) {
			return data, errInvalidParameterValue(fmt.Sprintf("LaunchTemplateData.BlockDeviceMapping.%d.Ebs.VolumeType", i+1), bd.VolumeType, "Valid values are standard, io1, io2, gp2, gp3, sc1, st1.")
		}
		bd.KMSKeyID = ebs.Get("KmsKeyId")
		bd.SnapshotID = ebs.Get("SnapshotId")
		if v := ebs.Get("Encrypted"); v != "" {
			bd.Encrypted = ptrTo(strings.EqualFold(v, "true"))
		}
		if v := ebs.Get("DeleteOnTermination"); v != "" {
			bd.DeleteOnTermination = ptrTo(strings.EqualFold(v, "true"))
		}
		if n, ok, aerr := ebs.Int("VolumeInitializationRate"); aerr != nil {
			return data, aerr
		} else if ok {
			key := fmt.Sprintf("LaunchTemplateData.BlockDeviceMapping.%d.Ebs.VolumeInitializationRate", i+1)
			if n < 100 || n > 300 {
				return data, errInvalidParameterValue(key, strconv.FormatInt(n, 10), "The volume initialization rate must be between 100 and 300 MiB/s.")
			}
			if bd.SnapshotID == "" {
				return data, errInvalidParameterCombination("A volume initialization rate can be specified only for a volume created from a snapshot.")
			}
			bd.VolumeInitializationRate = n
		}
		data.BlockDevices = append(data.BlockDevices, bd)
	}
	if aerr := parseLTCPUAndEnclave(d, &data); aerr != nil {
		return data, aerr
	}
	for i, ni := range d.Items("NetworkInterface") {
		n, aerr := parseLTNetworkInterface(ni, i+1)
		if aerr != nil {
			return data, aerr
		}
		data.NetworkInterfaces = append(data.NetworkInterfaces, n)
	}
	if aerr := checkLTNetworkInterfaces(data.NetworkInterfaces); aerr != nil {
		return data, aerr
	}
	for _, id := range append(append([]string{}, data.SecurityGroupIDs...), networkGroups(data.NetworkInterfaces)...) {
		if e.acct.securityGroup(id) == nil {
			return data, newAPIError("InvalidGroup.NotFound", 400, "The security group '%s' does not exist", id)
		}
	}
	specs, aerr := parseTagSpecs(d, "TagSpecification")
	if aerr != nil {
		return data, aerr
	}
	data.TagSpecs = specs
	return data, nil
}

// networkGroups are the interfaces' security groups, each once.
func networkGroups(nis []ltNetworkInterface) []string {
	var out []string
	for _, n := range nis {
		for _, g := range n.Groups {
			if !contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// parseLTCPUAndEnclave reads CpuOptions, EnclaveOptions and Placement.
func parseLTCPUAndEnclave(d params, data *ltData) *apiError {
	if v := d.Get("CpuOptions.NestedVirtualization"); v != "" {
		if v != "enabled" && v != "disabled" {
			return errInvalidParameterValue("LaunchTemplateData.CpuOptions.NestedVirtualization", v, "Valid values are enabled, disabled.")
		}
		data.NestedVirtualization = v
	}
	for key, dst := range map[string]**int64{"CpuOptions.CoreCount": &data.CoreCount, "CpuOptions.ThreadsPerCore": &data.ThreadsPerCore, "Placement.PartitionNumber": &data.PlacementPartitionNumber} {
		n, ok, aerr := d.Int(key)
		if aerr != nil {
			return aerr
		}
		if ok {
			if n < 1 {
				return errInvalidParameterValue("LaunchTemplateData."+key, strconv.FormatInt(n, 10), "The value must be a positive integer.")
			}
			*dst = &n
		}
	}
	if v := d.Get("EnclaveOptions.Enabled"); v != "" {
		data.EnclavesEnabled = ptrTo(strings.EqualFold(v, "true"))
	}
	data.PlacementGroupName, data.PlacementGroupID = d.Get("Placement.GroupName"), d.Get("Placement.GroupId")
	return nil
}

// parseLTNetworkInterface reads LaunchTemplateData.NetworkInterface.<n>.
func parseLTNetworkInterface(ni params, idx int) (ltNetworkInterface, *apiError) {
	key := func(f string) string { return fmt.Sprintf("LaunchTemplateData.NetworkInterface.%d.%s", idx, f) }
	n := ltNetworkInterface{Groups: ni.Strings("SecurityGroupId"), SubnetID: ni.Get("SubnetId"), InterfaceType: ni.Get("InterfaceType")}
	n.DeviceIndex, _, _ = ni.Int("DeviceIndex")
	if v := ni.Get("AssociatePublicIpAddress"); v != "" {
		n.AssociatePublicIPAddress = ptrTo(strings.EqualFold(v, "true"))
	}
	if v := n.InterfaceType; v != "" && v != "interface" && v != "efa" && v != "efa-only" {
		return n, errInvalidParameterValue(key("InterfaceType"), v, "Valid values are interface, efa, efa-only.")
	}
	for f, dst := range map[string]**int64{"NetworkCardIndex": &n.NetworkCardIndex, "Ipv4PrefixCount": &n.Ipv4PrefixCount} {
		v, ok, aerr := ni.Int(f)
		if aerr != nil {
			return n, aerr
		}
		if ok {
			if v < 0 {
				return n, errInvalidParameterValue(key(f), strconv.FormatInt(v, 10), "The value must not be negative.")
			}
			*dst = &v
		}
	}
	if ni.Has("ConnectionTrackingSpecification") {
		c := ni.Sub("ConnectionTrackingSpecification")
		ct := &ltConnTrack{}
		for _, f := range []struct {
			name     string
			dst      **int64
			min, max int64
		}{{"TcpEstablishedTimeout", &ct.TCPEstablished, 60, 432000}, {"UdpStreamTimeout", &ct.UDPStream, 60, 180}, {"UdpTimeout", &ct.UDP, 30, 60}} {
			v, ok, aerr := c.Int(f.name)
			if aerr != nil {
				return n, aerr
			}
			if ok {
				if v < f.min || v > f.max {
					return n, errInvalidParameterValue(key("ConnectionTrackingSpecification."+f.name), strconv.FormatInt(v, 10), fmt.Sprintf("The value must be between %d and %d.", f.min, f.max))
				}
				*f.dst = &v
			}
		}
		n.ConnTrack = ct
	}
	if n.InterfaceType == "efa-only" {
		// EC2 refuses addressing settings on an interface without IP.
		if n.Ipv4PrefixCount != nil || n.AssociatePublicIPAddress != nil || n.ConnTrack != nil {
			return n, errInvalidParameterCombination("An EFA-only network interface does not take Ipv4PrefixCount, AssociatePublicIpAddress or ConnectionTrackingSpecification.")
		}
	}
	return n, nil
}

// checkLTNetworkInterfaces refuses what EC2 refuses across interfaces:
// the same (card, device) twice, and a public IP with more than one
// interface that carries IP addresses.
func checkLTNetworkInterfaces(nis []ltNetworkInterface) *apiError {
	seen := map[[2]int64]bool{}
	public, withIP := false, 0
	for _, n := range nis {
		card := int64(0)
		if n.NetworkCardIndex != nil {
			card = *n.NetworkCardIndex
		}
		k := [2]int64{card, n.DeviceIndex}
		if seen[k] {
			return errInvalidParameterValue("LaunchTemplateData.NetworkInterface.DeviceIndex", strconv.FormatInt(n.DeviceIndex, 10), fmt.Sprintf("Each network interface needs a unique device index on network card %d.", card))
		}
		seen[k] = true
		if n.InterfaceType != "efa-only" {
			withIP++
		}
		if n.AssociatePublicIPAddress != nil && *n.AssociatePublicIPAddress {
			public = true
		}
	}
	if public && withIP > 1 {
		return errInvalidParameterCombination("The associatePublicIPAddress parameter cannot be specified when launching with multiple network interfaces.")
	}
	return nil
}

// findLaunchTemplate resolves a launch template by id or name, with EC2's
// not-found errors.
func (e *Emulator) findLaunchTemplate(id, name string) (*launchTemplateRec, *apiError) {
	switch {
	case id != "":
		if !ltIDRe.MatchString(id) {
			return nil, newAPIError("InvalidLaunchTemplateId.Malformed", 400, "The specified ID for the launch template (%s) is not valid.", id)
		}
		lt := e.acct.launchTemplates[id]
		if lt == nil {
			return nil, newAPIError("InvalidLaunchTemplateId.NotFound", 400, "The specified launch template, with template ID %s, does not exist.", id)
		}
		return lt, nil
	case name != "":
		lt := e.acct.ltByName[name]
		if lt == nil {
			return nil, newAPIError("InvalidLaunchTemplateName.NotFoundException", 400, "The specified launch template, with template name %s, does not exist.", name)
		}
		return lt, nil
	}
	return nil, errMissingParameter("LaunchTemplateId or LaunchTemplateName")
}

func (e *Emulator) describeLaunchTemplates(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	pg, aerr := parsePage(p, "DescribeLaunchTemplates")
	if aerr != nil {
		return nil, aerr
	}
	ids, names := p.Strings("LaunchTemplateId"), p.Strings("LaunchTemplateName")
	if (len(ids) > 0 || len(names) > 0) && p.Has("MaxResults") {
		return nil, errInvalidParameterCombination("The parameter LaunchTemplateIds or LaunchTemplateNames cannot be used with the parameter MaxResults")
	}
	for _, id := range ids {
		if _, aerr := e.findLaunchTemplate(id, ""); aerr != nil {
			return nil, aerr
		}
	}
	for _, n := range names {
		if e.acct.ltByName[n] == nil {
			return nil, newAPIError("InvalidLaunchTemplateName.NotFoundException", 400, "At least one of the launch templates specified in the request does not exist.")
		}
	}
	if aerr := checkFilterNames(filters, launchTemplateFields(&launchTemplateRec{})); aerr != nil {
		return nil, aerr
	}
	all := make([]*launchTemplateRec, 0, len(e.acct.launchTemplates))
	for _, lt := range e.acct.launchTemplates {
		all = append(all, lt)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	var items []launchTemplateXML
	for _, lt := range all {
		if len(ids) > 0 || len(names) > 0 {
			if !contains(ids, lt.ID) && !contains(names, lt.Name) {
				continue
			}
		}
		ok, aerr := matchFilters(filters, lt.Tags, launchTemplateFields(lt))
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			items = append(items, e.ltToXML(lt))
		}
	}
	from, to, next := pg.slice("DescribeLaunchTemplates", len(items))
	return describeLaunchTemplatesXML{LaunchTemplates: set[launchTemplateXML]{Items: items[from:to]}, NextToken: next}, nil
}

// launchTemplateFields answers the DescribeLaunchTemplates filters
// botocore's EC2 model documents (tag:KEY and tag-key by matchFilters).
func launchTemplateFields(lt *launchTemplateRec) fieldFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "launch-template-name":
			return []string{lt.Name}, true
		case "create-time":
			return []string{lt.CreateTime.UTC().Format(ec2Time)}, true
		}
		return nil, false
	}
}

func (e *Emulator) deleteLaunchTemplate(req *request) (any, *apiError) {
	p := req.params
	lt, aerr := e.findLaunchTemplate(p.Get("LaunchTemplateId"), p.Get("LaunchTemplateName"))
	if aerr != nil {
		return nil, aerr
	}
	delete(e.acct.launchTemplates, lt.ID)
	delete(e.acct.ltByName, lt.Name)
	return launchTemplateResultXML{LaunchTemplate: e.ltToXML(lt)}, nil
}

// ---- instances ----

// instanceQuery reads what DescribeInstances and DescribeInstanceStatus
// share: filters, instance ids (each well formed and known; not together
// with MaxResults) and the page.
func (e *Emulator) instanceQuery(p params, op string) ([]filter, []string, page, *apiError) {
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, nil, page{}, aerr
	}
	ids := p.Strings("InstanceId")
	if len(ids) > 0 && p.Has("MaxResults") {
		return nil, nil, page{}, errInvalidParameterCombination("The parameter instancesSet cannot be used with the parameter maxResults")
	}
	pg, aerr := parsePage(p, op)
	if aerr != nil {
		return nil, nil, page{}, aerr
	}
	var missing []string
	for _, id := range ids {
		if !instIDRe.MatchString(id) {
			return nil, nil, page{}, newAPIError("InvalidInstanceID.Malformed", 400, "Invalid id: \"%s\"", id)
		}
		if e.acct.instances[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, nil, page{}, notFoundIDs("instance", "InvalidInstanceID.NotFound", missing)
	}
	return filters, ids, pg, nil
}

func (e *Emulator) describeInstances(req *request) (any, *apiError) {
	p := req.params
	filters, ids, pg, aerr := e.instanceQuery(p, "DescribeInstances")
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkFilterNames(filters, instanceFields(e, &instanceRec{})); aerr != nil {
		return nil, aerr
	}
	var matched []*instanceRec
	for _, id := range e.acct.order {
		in := e.acct.instances[id]
		if in == nil {
			continue
		}
		if len(ids) > 0 && !contains(ids, id) {
			continue
		}
		ok, aerr := matchFilters(filters, in.Tags, instanceFields(e, in))
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			matched = append(matched, in)
		}
	}
	from, to, next := pg.slice("DescribeInstances", len(matched))
	out := describeInstancesXML{NextToken: next, ReservationSet: set[reservationXML]{Items: []reservationXML{}}}
	index := map[string]int{}
	for _, in := range matched[from:to] {
		i, ok := index[in.ReservationID]
		if !ok {
			i = len(out.ReservationSet.Items)
			index[in.ReservationID] = i
			out.ReservationSet.Items = append(out.ReservationSet.Items, reservationXML{ReservationID: in.ReservationID, OwnerID: e.opts.AccountID})
		}
		r := &out.ReservationSet.Items[i]
		r.InstancesSet.Items = append(r.InstancesSet.Items, e.instanceToXML(in))
	}
	return out, nil
}

// instanceFields answers DescribeInstances filters from what
// DescribeInstances shows of the instance (its instanceXML, built on first
// use). The names are those botocore's EC2 model documents; the ones it
// documents that the emulator has no data for are refused (see
// unimplementedFilters in model_internal_test.go).
func instanceFields(e *Emulator, in *instanceRec) fieldFunc {
	var x *instanceXML
	shown := func() *instanceXML {
		if x == nil {
			v := e.instanceToXML(in)
			x = &v
		}
		return x
	}
	one := func(v string) []string {
		if v == "" {
			return nil
		}
		return []string{v}
	}
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-id":
			return []string{in.ID}, true
		case "instance-state-name":
			return []string{in.State}, true
		case "instance-state-code":
			return []string{strconv.Itoa(stateCode(in.State))}, true
		case "instance-type":
			return []string{in.InstanceType}, true
		case "availability-zone":
			return []string{in.Zone}, true
		case "availability-zone-id":
			return one(in.ZoneID), true
		case "subnet-id":
			return one(shown().SubnetID), true
		case "vpc-id":
			return one(shown().VPCID), true
		case "image-id":
			return []string{in.ImageID}, true
		case "private-dns-name":
			return one(shown().PrivateDNSName), true
		case "private-ip-address":
			return one(shown().PrivateIPAddress), true
		case "dns-name", "ip-address", "ipv6-address":
			return nil, true // no public or IPv6 addresses
		case "key-name", "kernel-id", "ramdisk-id", "platform", "placement-group-name", "placement-partition-number",
			"host-id", "affinity", "outpost-arn", "product-code", "product-code.type":
			// Emulated instances have no key pair, kernel or ramdisk, are
			// Linux, and are launched outside placement groups, dedicated
			// hosts and outposts, without product
			// codes: these filters match none of them.
			return nil, true
		case "capacity-reservation-id":
			return one(in.CapacityReservationID), true
		case "instance-lifecycle":
			return one(shown().InstanceLifecycle), true
		case "architecture":
			return []string{in.Architecture}, true
		case "instance.group-id":
			return in.SecurityGroupIDs, true
		case "instance.group-name":
			var out []string
			for _, g := range shown().GroupSet.Items {
				out = append(out, g.GroupName)
			}
			return out, true
		case "owner-id":
			return []string{e.opts.AccountID}, true
		case "reservation-id":
			return []string{in.ReservationID}, true
		case "spot-instance-request-id":
			return one(in.SpotRequestID), true
		case "client-token":
			return one(shown().ClientToken), true
		case "launch-time":
			return []string{shown().LaunchTime}, true
		case "launch-index":
			return []string{strconv.Itoa(shown().AmiLaunchIndex)}, true
		case "reason":
			return one(shown().Reason), true
		case "state-reason-code", "state-reason-message":
			if r := shown().StateReason; r != nil {
				if name == "state-reason-code" {
					return []string{r.Code}, true
				}
				return []string{r.Message}, true
			}
			return nil, true
		case "root-device-type":
			return []string{shown().RootDeviceType}, true
		case "root-device-name":
			return []string{shown().RootDeviceName}, true
		case "virtualization-type":
			return []string{shown().VirtualizationType}, true
		case "hypervisor":
			return []string{shown().Hypervisor}, true
		case "tenancy":
			return []string{shown().Placement.Tenancy}, true
		case "monitoring-state":
			return []string{shown().Monitoring.State}, true
		case "source-dest-check":
			return []string{boolStr(shown().SourceDestCheck)}, true
		case "ebs-optimized":
			return []string{boolStr(shown().EBSOptimized)}, true
		case "ena-support":
			return []string{boolStr(shown().ENASupport)}, true
		case "boot-mode":
			return one(shown().BootMode), true
		case "platform-details":
			return []string{shown().PlatformDetails}, true
		case "usage-operation":
			return []string{shown().UsageOperation}, true
		case "iam-instance-profile.arn", "iam-instance-profile.id":
			if p := shown().IAMInstanceProfile; p != nil {
				if name == "iam-instance-profile.arn" {
					return []string{p.ARN}, true
				}
				return []string{p.ID}, true
			}
			return nil, true
		case "metadata-options.state":
			return []string{shown().MetadataOptions.State}, true
		case "metadata-options.http-tokens":
			return one(shown().MetadataOptions.HTTPTokens), true
		case "metadata-options.http-put-response-hop-limit":
			return []string{strconv.FormatInt(shown().MetadataOptions.HTTPPutResponseHopLimit, 10)}, true
		case "metadata-options.http-endpoint":
			return one(shown().MetadataOptions.HTTPEndpoint), true
		case "metadata-options.http-protocol-ipv6":
			return one(shown().MetadataOptions.HTTPProtocolIPv6), true
		case "metadata-options.instance-metadata-tags":
			return one(shown().MetadataOptions.InstanceMetadataTags), true
		case "block-device-mapping.device-name", "block-device-mapping.volume-id", "block-device-mapping.status",
			"block-device-mapping.attach-time", "block-device-mapping.delete-on-termination":
			var out []string
			for _, b := range shown().BlockDeviceMapping.Items {
				switch name {
				case "block-device-mapping.device-name":
					out = append(out, b.DeviceName)
				case "block-device-mapping.volume-id":
					out = append(out, b.EBS.VolumeID)
				case "block-device-mapping.status":
					out = append(out, b.EBS.Status)
				case "block-device-mapping.attach-time":
					out = append(out, b.EBS.AttachTime)
				default:
					out = append(out, boolStr(b.EBS.DeleteOnTermination))
				}
			}
			return out, true
		}
		return nil, false
	}
}

func (e *Emulator) instanceToXML(in *instanceRec) instanceXML {
	x := instanceXML{
		InstanceID: in.ID, ImageID: in.ImageID,
		InstanceState:  instanceStateXML{Code: stateCode(in.State), Name: in.State},
		PrivateDNSName: in.PrivateDNSName, InstanceType: in.InstanceType,
		LaunchTime: in.LaunchTime.UTC().Format(ec2Time),
		Placement: placementXML{AvailabilityZone: in.Zone, AvailabilityZoneID: in.ZoneID, Tenancy: "default",
			GroupName: in.PlacementGroupName, GroupID: in.PlacementGroupID, PartitionNumber: in.PartitionNumber},
		Monitoring: monitoringXML{State: "disabled"},
		SubnetID:   in.SubnetID, VPCID: in.VPCID, PrivateIPAddress: in.PrivateIP, SourceDestCheck: true,
		Architecture: in.Architecture, RootDeviceType: "ebs", RootDeviceName: "/dev/xvda",
		VirtualizationType: "hvm", ClientToken: "fleet-" + in.FleetID, TagSet: optTagSet(in.Tags), Hypervisor: "xen",
		EBSOptimized: true, ENASupport: true, PlatformDetails: "Linux/UNIX", UsageOperation: "RunInstances", BootMode: "uefi",
		MetadataOptions: metadataOptionsXML{
			State: "applied", HTTPTokens: in.MetadataOptions.HTTPTokens, HTTPPutResponseHopLimit: in.MetadataOptions.HTTPPutResponseHopLimit,
			HTTPEndpoint: in.MetadataOptions.HTTPEndpoint, HTTPProtocolIPv6: in.MetadataOptions.HTTPProtocolIPv6,
			InstanceMetadataTags: in.MetadataOptions.InstanceMetadataTags,
		},
	}
	if in.State == StateTerminated || in.State == StateShuttingDown {
		x.PrivateDNSName, x.PrivateIPAddress = "", ""
		if in.State == StateTerminated {
			x.SubnetID, x.VPCID = "", ""
		}
	}
	if in.StateReason != "" {
		code, msg, _ := strings.Cut(in.StateReason, ": ")
		x.StateReason = &stateReasonXML{Code: code, Message: in.StateReason}
		x.Reason = msg
	}
	if in.CapacityType == "spot" {
		x.InstanceLifecycle = "spot"
		x.SpotInstanceRequestID = in.SpotRequestID
	}
	if in.CapacityType == MarketCapacityBlock {
		x.InstanceLifecycle = MarketCapacityBlock
	}
	x.CapacityReservationID = in.CapacityReservationID
	for _, g := range in.SecurityGroupIDs {
		name := ""
		if sg := e.acct.securityGroup(g); sg != nil {
			name = sg.Name
		}
		x.GroupSet.Items = append(x.GroupSet.Items, groupXML{GroupID: g, GroupName: name})
	}
	if in.InstanceProfileARN != "" {
		id := "AIPA"
		if p := e.acct.profileByARN(in.InstanceProfileARN); p != nil {
			id = p.ID
		}
		x.IAMInstanceProfile = &iamProfileXML{ARN: in.InstanceProfileARN, ID: id}
	}
	if in.State != StateTerminated {
		for i, bd := range in.BlockDevices {
			b := instanceBlockDeviceXML{DeviceName: bd.DeviceName}
			b.EBS.VolumeID = fmt.Sprintf("vol-0%s%x", in.ID[3:17], i)
			b.EBS.Status = "attached"
			b.EBS.AttachTime = in.LaunchTime.UTC().Format(ec2Time)
			b.EBS.DeleteOnTermination = bd.DeleteOnTermination == nil || *bd.DeleteOnTermination
			x.BlockDeviceMapping.Items = append(x.BlockDeviceMapping.Items, b)
		}
	}
	return x
}

// knownInstances checks instance ids as TerminateInstances and
// RebootInstances do, before acting on any: InvalidInstanceID.Malformed
// for the first bad one, else InvalidInstanceID.NotFound naming every
// unknown one. Callers hold mu.
func (e *Emulator) knownInstances(ids []string) *apiError {
	var missing []string
	for _, id := range ids {
		if !instIDRe.MatchString(id) {
			return newAPIError("InvalidInstanceID.Malformed", 400, "Invalid id: \"%s\"", id)
		}
		if e.acct.instances[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return notFoundIDs("instance", "InvalidInstanceID.NotFound", missing)
	}
	return nil
}

func (e *Emulator) terminateInstances(req *request) (any, *apiError) {
	ids := req.params.Strings("InstanceId")
	if len(ids) == 0 {
		return nil, errMissingParameter("InstanceId")
	}
	if len(ids) > 1000 {
		return nil, errInvalidParameterValue("InstanceId", strconv.Itoa(len(ids)), "At most 1000 instance ids may be terminated at once.")
	}
	if aerr := e.knownInstances(ids); aerr != nil {
		return nil, aerr
	}
	now := e.clock.Now()
	out := terminateInstancesXML{}
	for _, id := range ids {
		in := e.acct.instances[id]
		prev := in.State
		if prev != StateShuttingDown && prev != StateTerminated {
			e.beginTermination(in, "Client.UserInitiatedShutdown: User initiated shutdown", now)
		}
		out.InstancesSet.Items = append(out.InstancesSet.Items, stateChangeXML{
			InstanceID:    id,
			CurrentState:  instanceStateXML{Code: stateCode(in.State), Name: in.State},
			PreviousState: instanceStateXML{Code: stateCode(prev), Name: prev},
		})
	}
	return out, nil
}
