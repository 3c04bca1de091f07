package awsemu

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
)

var pricingOps = map[string]jsonHandler{
	"GetProducts": (*Emulator).pricingGetProducts,
}

// regionLocations are the Pricing API's "location" names of regions.
var regionLocations = map[string]string{
	"af-south-1": "Africa (Cape Town)", "ap-east-1": "Asia Pacific (Hong Kong)",
	"ap-northeast-1": "Asia Pacific (Tokyo)", "ap-northeast-2": "Asia Pacific (Seoul)",
	"ap-northeast-3": "Asia Pacific (Osaka)", "ap-south-1": "Asia Pacific (Mumbai)",
	"ap-south-2": "Asia Pacific (Hyderabad)", "ap-southeast-1": "Asia Pacific (Singapore)",
	"ap-southeast-2": "Asia Pacific (Sydney)", "ap-southeast-3": "Asia Pacific (Jakarta)",
	"ap-southeast-4": "Asia Pacific (Melbourne)", "ap-southeast-5": "Asia Pacific (Malaysia)",
	"ap-southeast-7": "Asia Pacific (Thailand)", "ca-central-1": "Canada (Central)",
	"ca-west-1": "Canada West (Calgary)", "eu-central-1": "EU (Frankfurt)", "eu-central-2": "EU (Zurich)",
	"eu-north-1": "EU (Stockholm)", "eu-south-1": "EU (Milan)", "eu-south-2": "EU (Spain)",
	"eu-west-1": "EU (Ireland)", "eu-west-2": "EU (London)", "eu-west-3": "EU (Paris)",
	"il-central-1": "Israel (Tel Aviv)", "me-central-1": "Middle East (UAE)", "me-south-1": "Middle East (Bahrain)",
	"mx-central-1": "Mexico (Central)", "sa-east-1": "South America (Sao Paulo)",
	"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)",
	"us-gov-east-1": "AWS GovCloud (US-East)", "us-gov-west-1": "AWS GovCloud (US-West)",
	"us-west-1": "US West (N. California)", "us-west-2": "US West (Oregon)",
}

// product is one priced (region, instance type, tenancy): Linux,
// on-demand, no pre-installed software. Shared tenancy is the catalog's
// price; Dedicated (dedicated instances) is DedicatedPriceFactor times it,
// for every type but the burstable ones, which EC2 does not sell dedicated.
type product struct {
	region string
	info   *InstanceTypeInfo
	price  float64
	// dedicated is Dedicated tenancy (else Shared).
	dedicated bool
}

// DedicatedPriceFactor is the price of a Dedicated-tenancy product
// relative to its Shared one.
const DedicatedPriceFactor = 1.1

func (p *product) tenancy() string {
	if p.dedicated {
		return "Dedicated"
	}
	return "Shared"
}

// productFamily is the Pricing API's product family of an instance type.
func (p *product) productFamily() string {
	if p.info.BareMetal {
		return "Compute Instance (bare metal)"
	}
	return "Compute Instance"
}

func (p *product) sku() string {
	h := fnv.New64a()
	h.Write([]byte(p.region + "\x00" + p.info.Name))
	if p.dedicated {
		h.Write([]byte("\x00Dedicated"))
	}
	const alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	v := h.Sum64()
	b := make([]byte, 16)
	for i := range b {
		b[i] = alphabet[v%uint64(len(alphabet))]
		v = v/uint64(len(alphabet)) ^ uint64(i)*0x9e3779b97f4a7c15
	}
	return string(b)
}

var familyNames = map[byte]string{
	'a': "General purpose", 'm': "General purpose", 't': "General purpose", 'c': "Compute optimized",
	'r': "Memory optimized", 'x': "Memory optimized", 'u': "Memory optimized", 'z': "Memory optimized",
	'i': "Storage optimized", 'd': "Storage optimized", 'h': "Storage optimized",
	'p': "GPU instance", 'g': "GPU instance", 'f': "FPGA Instances",
}

func (p *product) attributes() map[string]string {
	t := p.info
	family := "Machine Learning ASIC Instances"
	if f, ok := familyNames[t.Name[0]]; ok {
		family = f
	}
	usage := "BoxUsage:" + t.Name
	if p.dedicated {
		usage = "DedicatedUsage:" + t.Name
	}
	if p.region != "us-east-1" {
		usage = strings.ToUpper(p.region) + "-" + usage
	}
	gen := "No"
	if t.CurrentGeneration {
		gen = "Yes"
	}
	attrs := map[string]string{
		"servicecode": "AmazonEC2", "servicename": "Amazon Elastic Compute Cloud",
		"instanceType": t.Name, "instanceFamily": family, "currentGeneration": gen,
		"vcpu": strconv.Itoa(int(t.VCPU)), "memory": formatGiB(t.MemoryMiB),
		"networkPerformance": t.NetworkPerformance, "processorArchitecture": "64-bit",
		"physicalProcessor": t.Manufacturer, "operatingSystem": "Linux", "tenancy": p.tenancy(),
		"capacitystatus": "Used", "preInstalledSw": "NA", "licenseModel": "No License required",
		"location": regionLocations[p.region], "locationType": "AWS Region", "regionCode": p.region,
		"usagetype": usage, "operation": "RunInstances", "marketoption": "OnDemand",
	}
	if t.GPU != nil && t.GPU.Count > 0 {
		attrs["gpu"] = strconv.Itoa(int(t.GPU.Count))
	}
	if attrs["location"] == "" {
		attrs["location"] = p.region
	}
	return attrs
}

func formatGiB(mib int64) string {
	gib := float64(mib) / 1024
	s := strconv.FormatFloat(gib, 'f', -1, 64)
	return s + " GiB"
}

// priceListEntry renders a product as the JSON document AWS puts (as a
// string) in GetProducts' PriceList.
func (p *product) priceListEntry() string {
	sku := p.sku()
	const termCode, rateCode = "JRTCKXETXF", "6YS6EN2CT7"
	term := sku + "." + termCode
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": p.productFamily(),
			"attributes":    p.attributes(),
			"sku":           sku,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				term: map[string]any{
					"priceDimensions": map[string]any{
						term + "." + rateCode: map[string]any{
							"unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": []string{},
							"description":  fmt.Sprintf("$%s per On Demand Linux %s%s Instance Hour", strconv.FormatFloat(p.price, 'f', -1, 64), map[bool]string{true: "Dedicated ", false: ""}[p.dedicated], p.info.Name),
							"rateCode":     term + "." + rateCode,
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(p.price, 'f', 10, 64)},
						},
					},
					"sku": sku, "effectiveDate": "2025-04-01T00:00:00Z", "offerTermCode": termCode,
					"termAttributes": map[string]string{},
				},
			},
		},
		"version":         "20250401000000",
		"publicationDate": "2025-04-04T22:41:22Z",
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

type pricingFilter struct {
	Type  string
	Field string
	Value string
}

// products lists every priced (region, type, tenancy) sorted by region,
// type, then tenancy (Shared first).
// Callers hold mu.
func (e *Emulator) products() []product {
	if e.productCache != nil {
		return e.productCache
	}
	regions := []string{e.opts.Region}
	if r, ok := e.catalog.(interface{ Regions() []string }); ok {
		regions = r.Regions()
	}
	types := e.catalog.InstanceTypes()
	var out []product
	for _, region := range regions {
		for i := range types {
			if price, ok := e.catalog.OnDemandPrice(region, types[i].Name); ok {
				out = append(out, product{region: region, info: &types[i], price: price})
				if !types[i].Burstable {
					out = append(out, product{region: region, info: &types[i], price: price * DedicatedPriceFactor, dedicated: true})
				}
			}
		}
	}
	e.productCache = out
	return out
}

func (e *Emulator) pricingGetProducts(req *request) (any, *apiError) {
	var in struct {
		ServiceCode   string
		Filters       []pricingFilter
		FormatVersion string
		NextToken     string
		MaxResults    *int
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if in.ServiceCode == "" {
		return nil, newAPIError("ValidationException", 400, "1 validation error detected: Value null at 'serviceCode' failed to satisfy constraint: Member must not be null")
	}
	if in.ServiceCode != "AmazonEC2" {
		return nil, newAPIError("InvalidParameterException", 400, "Input ServiceCode %s is not valid for this emulator (only AmazonEC2 is priced)", in.ServiceCode)
	}
	if in.FormatVersion != "" && in.FormatVersion != "aws_v1" {
		return nil, newAPIError("InvalidParameterException", 400, "FormatVersion %s is not valid; use aws_v1", in.FormatVersion)
	}
	size := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			return nil, newAPIError("ValidationException", 400, "1 validation error detected: Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value between 1 and 100", *in.MaxResults)
		}
		size = *in.MaxResults
	}
	for i, f := range in.Filters {
		switch f.Type {
		case "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF":
		default:
			return nil, newAPIError("ValidationException", 400, "1 validation error detected: Value '%s' at 'filters.%d.member.type' failed to satisfy constraint: Member must satisfy enum value set: [CONTAINS, ANY_OF, EQUALS, TERM_MATCH, NONE_OF]", f.Type, i+1)
		}
		if f.Field == "" {
			return nil, newAPIError("ValidationException", 400, "1 validation error detected: Value null at 'filters.%d.member.field' failed to satisfy constraint: Member must not be null", i+1)
		}
	}
	start := 0
	if in.NextToken != "" {
		off, ok := decodeToken("GetProducts", in.NextToken)
		if !ok {
			return nil, newAPIError("InvalidNextTokenException", 400, "The pagination token is invalid. Try again without a pagination token.")
		}
		start = off
	}
	e.mu.Lock()
	all := e.products()
	e.mu.Unlock()
	var matched []*product
	for i := range all {
		p := &all[i]
		if productMatches(p, in.Filters) {
			matched = append(matched, p)
		}
	}
	from, to, next := page{start: start, size: size}.slice("GetProducts", len(matched))
	list := make([]string, 0, to-from)
	for _, p := range matched[from:to] {
		list = append(list, p.priceListEntry())
	}
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": list}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// productMatches applies GetProducts filters to a product. Field names
// compare case-insensitively, as do values; CONTAINS matches substrings and
// ANY_OF/NONE_OF take comma-separated lists.
func productMatches(p *product, filters []pricingFilter) bool {
	for _, f := range filters {
		v, ok := p.attribute(strings.ToLower(f.Field))
		switch f.Type {
		case "TERM_MATCH", "EQUALS":
			if !ok || !strings.EqualFold(v, f.Value) {
				return false
			}
		case "CONTAINS":
			if !ok || !strings.Contains(strings.ToLower(v), strings.ToLower(f.Value)) {
				return false
			}
		case "ANY_OF":
			if !ok || !containsFold(strings.Split(f.Value, ","), v) {
				return false
			}
		case "NONE_OF":
			if ok && containsFold(strings.Split(f.Value, ","), v) {
				return false
			}
		}
	}
	return true
}

// attribute looks one attribute up by its lower-cased name without
// building the whole map (GetProducts scans tens of thousands of products).
func (p *product) attribute(lower string) (string, bool) {
	switch lower {
	case "instancetype":
		return p.info.Name, true
	case "regioncode":
		return p.region, true
	case "location":
		if l := regionLocations[p.region]; l != "" {
			return l, true
		}
		return p.region, true
	case "operatingsystem":
		return "Linux", true
	case "tenancy":
		return p.tenancy(), true
	case "productfamily":
		return p.productFamily(), true
	case "capacitystatus":
		return "Used", true
	case "preinstalledsw":
		return "NA", true
	case "licensemodel":
		return "No License required", true
	case "servicecode":
		return "AmazonEC2", true
	case "marketoption":
		return "OnDemand", true
	case "sku":
		return p.sku(), true
	}
	if !pricedAttributes()[lower] {
		return "", false // not an attribute of any product: no map to build
	}
	attrs := p.attributes()
	for k, v := range attrs {
		if strings.ToLower(k) == lower {
			return v, true
		}
	}
	return "", false
}

// pricedAttributes is the set of lower-cased attribute names products have.
var pricedAttributes = sync.OnceValue(func() map[string]bool {
	sample := product{region: "us-east-1", info: &InstanceTypeInfo{Name: "m5.large", GPU: &GPUInfo{Count: 1}}}
	out := map[string]bool{}
	for k := range sample.attributes() {
		out[strings.ToLower(k)] = true
	}
	return out
})

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(strings.TrimSpace(v), s) {
			return true
		}
	}
	return false
}
