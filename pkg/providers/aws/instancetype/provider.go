package instancetype

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Default refresh intervals.
const (
	DefaultPriceRefresh = 12 * time.Hour
	DefaultTypeRefresh  = 6 * time.Hour
)

// Options configure a Provider.
type Options struct {
	EC2     *ec2.Client
	Pricing *pricing.Client
	Region  string
	Clock   clock.PassiveClock
	// Unavailable is the shared insufficient-capacity cache (a new one when
	// nil).
	Unavailable *unavailable.Cache
	// PriceRefresh and TypeRefresh bound how old prices and the type list
	// may get before List reloads them.
	PriceRefresh, TypeRefresh time.Duration
	// VMMemoryOverheadPercent and ReservedENIs feed the allocatable
	// computation (catalog.KubeletSettings).
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	// Builtin is the fallback for prices the Pricing API does not give and
	// facts DescribeInstanceTypes does not report (default
	// catalog.Builtin()).
	Builtin *catalog.Catalog
	Log     logr.Logger
	// SpotPriceFailures counts price loads whose spot prices were not live
	// (a no-op counter when nil); see SpotPriceStatus for the state.
	SpotPriceFailures prometheus.Counter
}

// Provider lists instance types with offerings and prices for node
// classes. It caches what it reads; it is safe for concurrent use.
type Provider struct {
	o Options

	mu         sync.Mutex
	refreshing bool
	snap       *snapshot
	typesAt    time.Time
	pricesAt   time.Time
	listCache  map[string]listEntry
}

type snapshot struct {
	types    []*catalog.Type
	labels   map[string]map[string]string
	offered  map[string]map[string]bool // zone -> type -> offered
	onDemand map[string]float64
	spot     map[zoneType]float64
	// spotStatus says where spot came from.
	spotStatus SpotPriceStatus
	gen        uint64
}

// SpotPriceStatus says whether the spot prices in use are live.
type SpotPriceStatus struct {
	// Known is false until the first load.
	Known bool
	// Live: from DescribeSpotPriceHistory. When false, Error says why the
	// last read failed, and Stale tells what stands in: the last live
	// prices (read at LiveAt) when there were any, else the built-in rule
	// (catalog.SpotPrice).
	Live   bool
	Error  string
	Stale  bool
	LiveAt time.Time
	// Since is when the status (live or not) began.
	Since time.Time
}

// Fallback describes, for a condition or an event, what stands in for
// live spot prices ("" when they are live).
func (s SpotPriceStatus) Fallback() string {
	switch {
	case !s.Known || s.Live:
		return ""
	case s.Stale:
		return fmt.Sprintf("DescribeSpotPriceHistory failed (%s); using the last live spot prices, read at %s", s.Error, s.LiveAt.UTC().Format(time.RFC3339))
	default:
		return fmt.Sprintf("DescribeSpotPriceHistory failed (%s); spot offerings are priced by the built-in rule (a fixed per-type and per-zone fraction of the on-demand price), not by the market", s.Error)
	}
}

type zoneType struct{ zone, typ string }

type listEntry struct {
	gen, unavailable uint64
	types            []*cloudprovider.InstanceType
}

// New returns a Provider; nothing is read until the first List.
func New(o Options) *Provider {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Unavailable == nil {
		o.Unavailable = unavailable.New(o.Clock, 0)
	}
	if o.PriceRefresh == 0 {
		o.PriceRefresh = DefaultPriceRefresh
	}
	if o.TypeRefresh == 0 {
		o.TypeRefresh = DefaultTypeRefresh
	}
	if o.Builtin == nil {
		o.Builtin = catalog.Builtin()
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.SpotPriceFailures == nil {
		o.SpotPriceFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "unregistered"})
	}
	return &Provider{o: o, listCache: map[string]listEntry{}}
}

// Unavailable returns the provider's insufficient-capacity cache.
func (p *Provider) Unavailable() *unavailable.Cache { return p.o.Unavailable }

// Refresh reloads types, offerings and prices now.
func (p *Provider) Refresh(ctx context.Context) error {
	p.mu.Lock()
	old := p.snap
	p.mu.Unlock()
	next, err := p.load(ctx, old, true, true)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.install(next, true, true)
	return nil
}

// ensureLocked loads the data on first use (synchronously); later, data
// older than its refresh interval is reloaded in the background while
// callers keep using what is there, so a launch never waits for a
// refresh. Callers hold p.mu.
func (p *Provider) ensureLocked(ctx context.Context) error {
	if p.snap == nil {
		next, err := p.load(ctx, nil, true, true)
		if err != nil {
			return err
		}
		p.install(next, true, true)
		return nil
	}
	now := p.o.Clock.Now()
	types := now.Sub(p.typesAt) >= p.o.TypeRefresh
	prices := now.Sub(p.pricesAt) >= p.o.PriceRefresh
	if (types || prices) && !p.refreshing {
		p.refreshing = true
		old := p.snap
		go p.background(old, types, prices)
	}
	return nil
}

// background reloads stale data and installs it.
func (p *Provider) background(old *snapshot, types, prices bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	next, err := p.load(ctx, old, types, prices)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refreshing = false
	if err != nil {
		p.o.Log.Info("refreshing instance types and prices failed; keeping the old data", "error", err.Error())
		return
	}
	p.install(next, types, prices)
}

// load reads what is stale into a new snapshot based on old (nil: read
// everything). It holds no lock.
func (p *Provider) load(ctx context.Context, old *snapshot, types, prices bool) (*snapshot, error) {
	next := &snapshot{}
	if old != nil {
		*next = *old
	}
	if types || old == nil {
		ts, labels, err := p.describeTypes(ctx)
		if err != nil {
			return nil, err
		}
		offered, err := p.describeOfferings(ctx)
		if err != nil {
			return nil, err
		}
		next.types, next.labels, next.offered = ts, labels, offered
	}
	if prices || old == nil {
		next.onDemand = p.onDemandPrices(ctx, next.types)
		now := p.o.Clock.Now()
		spot, err := p.readSpotPrices(ctx)
		var st SpotPriceStatus
		switch {
		case err == nil:
			next.spot = spot
			st = SpotPriceStatus{Known: true, Live: true, LiveAt: now}
		case old != nil && (old.spotStatus.Live || old.spotStatus.Stale):
			// Keep the last live prices: stale market data beats none.
			st = SpotPriceStatus{Known: true, Error: err.Error(), Stale: true, LiveAt: old.spotStatus.LiveAt}
		default:
			next.spot = p.syntheticSpotPrices(next.types, next.onDemand, next.offered)
			st = SpotPriceStatus{Known: true, Error: err.Error()}
		}
		st.Since = now
		if old != nil && old.spotStatus.Live == st.Live && old.spotStatus.Stale == st.Stale {
			st.Since = old.spotStatus.Since
		}
		if !st.Live {
			p.o.Log.Error(err, "spot prices are not live", "fallback", st.Fallback())
			p.o.SpotPriceFailures.Inc()
		}
		next.spotStatus = st
	}
	return next, nil
}

// install makes next current. Callers hold p.mu.
func (p *Provider) install(next *snapshot, types, prices bool) {
	now := p.o.Clock.Now()
	if types {
		p.typesAt = now
	}
	if prices {
		p.pricesAt = now
	}
	if p.snap != nil {
		next.gen = p.snap.gen
	}
	next.gen++
	p.snap = next
	p.listCache = map[string]listEntry{}
}

// Generation counts the data snapshots installed so far (for tests and
// metrics).
func (p *Provider) Generation() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snap == nil {
		return 0
	}
	return p.snap.gen
}

func (p *Provider) describeTypes(ctx context.Context) ([]*catalog.Type, map[string]map[string]string, error) {
	var types []*catalog.Type
	labels := map[string]map[string]string{}
	pg := ec2.NewDescribeInstanceTypesPaginator(p.o.EC2, &ec2.DescribeInstanceTypesInput{})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("describing instance types: %w", err)
		}
		for _, info := range page.InstanceTypes {
			t := FromEC2(info, p.o.Builtin)
			types = append(types, t)
			labels[t.Name] = t.Labels()
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].Name < types[j].Name })
	return types, labels, nil
}

func (p *Provider) describeOfferings(ctx context.Context) (map[string]map[string]bool, error) {
	offered := map[string]map[string]bool{}
	pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.o.EC2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			zone := aws.ToString(o.Location)
			if offered[zone] == nil {
				offered[zone] = map[string]bool{}
			}
			offered[zone][string(o.InstanceType)] = true
		}
	}
	return offered, nil
}

// onDemandPrices reads Linux shared-tenancy on-demand prices from the
// Pricing API; types it does not price (or all of them, when the API
// fails) get the built-in catalog's price.
func (p *Provider) onDemandPrices(ctx context.Context, types []*catalog.Type) map[string]float64 {
	prices := map[string]float64{}
	if p.o.Pricing != nil {
		if err := p.readPricing(ctx, prices); err != nil {
			p.o.Log.Info("on-demand prices from the Pricing API failed; using the built-in table", "error", err.Error())
		}
	}
	fallback := 0
	for _, t := range types {
		if _, ok := prices[t.Name]; ok {
			continue
		}
		if price, ok := p.o.Builtin.OnDemandPrice(p.o.Region, t.Name); ok {
			prices[t.Name] = price
			fallback++
		}
	}
	if fallback > 0 {
		p.o.Log.V(1).Info("on-demand prices from the built-in table", "types", fallback)
	}
	return prices
}

func (p *Provider) readPricing(ctx context.Context, prices map[string]float64) error {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	pg := pricing.NewGetProductsPaginator(p.o.Pricing, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			filter("regionCode", p.o.Region), filter("operatingSystem", "Linux"), filter("tenancy", "Shared"),
			filter("preInstalledSw", "NA"), filter("capacitystatus", "Used"),
		},
		FormatVersion: aws.String("aws_v1"),
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("getting products: %w", err)
		}
		for _, doc := range page.PriceList {
			typ, price, err := ParsePriceListEntry(doc)
			if err != nil {
				p.o.Log.V(1).Info("skipping a price list entry", "error", err.Error())
				continue
			}
			if typ != "" {
				prices[typ] = price
			}
		}
	}
	return nil
}

// ParsePriceListEntry reads one Pricing API PriceList document: the
// instance type and its on-demand USD hourly price. An entry without an
// instance type or an on-demand USD price returns "" and no error.
func ParsePriceListEntry(doc string) (string, float64, error) {
	var e struct {
		Product struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(doc), &e); err != nil {
		return "", 0, fmt.Errorf("price list entry: %w", err)
	}
	typ := e.Product.Attributes["instanceType"]
	if typ == "" {
		return "", 0, nil
	}
	for _, termKey := range slices.Sorted(maps.Keys(e.Terms.OnDemand)) {
		dims := e.Terms.OnDemand[termKey].PriceDimensions
		for _, dimKey := range slices.Sorted(maps.Keys(dims)) {
			usd, ok := dims[dimKey].PricePerUnit["USD"]
			if !ok {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("price list entry for %s: USD price %q: %w", typ, usd, err)
			}
			if price > 0 {
				return typ, price, nil
			}
		}
	}
	return "", 0, nil
}

// readSpotPrices reads the latest Linux spot price of each (type, zone).
func (p *Provider) readSpotPrices(ctx context.Context) (map[zoneType]float64, error) {
	prices := map[zoneType]float64{}
	stamps := map[zoneType]time.Time{}
	pg := ec2.NewDescribeSpotPriceHistoryPaginator(p.o.EC2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX"},
		StartTime:           aws.Time(p.o.Clock.Now()),
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing spot price history: %w", err)
		}
		for _, sp := range page.SpotPriceHistory {
			k := zoneType{zone: aws.ToString(sp.AvailabilityZone), typ: string(sp.InstanceType)}
			price, perr := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if perr != nil || price <= 0 {
				continue
			}
			ts := aws.ToTime(sp.Timestamp)
			if old, ok := stamps[k]; ok && !ts.After(old) {
				continue
			}
			prices[k], stamps[k] = price, ts
		}
	}
	return prices, nil
}

// syntheticSpotPrices is the catalog's spot rule for every offered type
// that sells spot: what stands in when no live price was ever read.
func (p *Provider) syntheticSpotPrices(types []*catalog.Type, onDemand map[string]float64, offered map[string]map[string]bool) map[zoneType]float64 {
	prices := map[zoneType]float64{}
	for zone, set := range offered {
		for _, t := range types {
			if od, ok := onDemand[t.Name]; ok && set[t.Name] && t.SpotSupported {
				prices[zoneType{zone, t.Name}] = catalog.SpotPrice(p.o.Region, zone, t.Name, od)
			}
		}
	}
	return prices
}

// SpotPriceStatus reports whether the spot prices in use are live (zero
// value before the first load).
func (p *Provider) SpotPriceStatus() SpotPriceStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snap == nil {
		return SpotPriceStatus{}
	}
	return p.snap.spotStatus
}

// KubeletSettings converts the node class fields allocatable depends on.
func KubeletSettings(nc *awsv1.EC2NodeClass, vmOverhead float64, reservedENIs int) catalog.KubeletSettings {
	s := catalog.KubeletSettings{AMIFamily: nc.AMIFamily(), VMMemoryOverheadPercent: vmOverhead, ReservedENIs: reservedENIs}
	if k := nc.Spec.Kubelet; k != nil {
		s.MaxPods, s.PodsPerCore = k.MaxPods, k.PodsPerCore
		s.KubeReserved, s.SystemReserved = k.KubeReserved, k.SystemReserved
		s.EvictionHard, s.EvictionSoft = k.EvictionHard, k.EvictionSoft
	}
	if nc.Spec.InstanceStorePolicy != nil {
		s.InstanceStorePolicy = string(*nc.Spec.InstanceStorePolicy)
	}
	if v := EphemeralVolume(nc); v != nil && v.EBS != nil && v.EBS.VolumeSize != nil {
		q := v.EBS.VolumeSize.DeepCopy()
		s.EphemeralVolumeSize = &q
	}
	return s
}

// EphemeralVolume is the block device mapping that holds ephemeral storage:
// the one marked rootVolume, else the family's data device (/dev/xvdb on
// Bottlerocket, /dev/xvda otherwise); nil when the class lists neither.
func EphemeralVolume(nc *awsv1.EC2NodeClass) *awsv1.BlockDeviceMapping {
	for _, b := range nc.Spec.BlockDeviceMappings {
		if b != nil && b.RootVolume {
			return b
		}
	}
	dev := "/dev/xvda"
	if nc.AMIFamily() == awsv1.AMIFamilyBottlerocket {
		dev = "/dev/xvdb"
	}
	for _, b := range nc.Spec.BlockDeviceMappings {
		if b != nil && b.DeviceName != nil && *b.DeviceName == dev {
			return b
		}
	}
	return nil
}

// List returns the instance types the node class can launch: types whose
// architecture has an image in status.amis, offered in a zone of
// status.subnets, with on-demand and spot offerings priced and marked
// unavailable where EC2 recently had no capacity, and only the types
// that can take the class's launch template (NarrowingFor: Nitro
// Enclaves, connection tracking, network interfaces). The result is
// shared (callers must not modify it) and sorted by name.
func (p *Provider) List(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	family := nc.AMIFamily()
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom:
	default:
		return nil, fmt.Errorf("AMI family %q is not supported by the AWS provider", family)
	}
	settings := KubeletSettings(nc, p.o.VMMemoryOverheadPercent, p.o.ReservedENIs)
	zones := map[string]string{}
	for _, s := range nc.Status.Subnets {
		zones[s.Zone] = s.ZoneID
	}
	arches := map[string]bool{}
	for _, a := range nc.Status.AMIs {
		for _, r := range a.Requirements {
			if r.Key == "kubernetes.io/arch" {
				for _, v := range r.Values {
					arches[v] = true
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensureLocked(ctx); err != nil {
		return nil, err
	}
	unavailable := p.o.Unavailable.Generation()
	narrow := NarrowingFor(&nc.Spec)
	key := listKey(settings, zones, arches, narrow)
	if e, ok := p.listCache[key]; ok && e.gen == p.snap.gen && e.unavailable == unavailable {
		return e.types, nil
	}
	out := p.build(settings, zones, arches, narrow)
	p.listCache[key] = listEntry{gen: p.snap.gen, unavailable: unavailable, types: out}
	return out, nil
}

func listKey(s catalog.KubeletSettings, zones map[string]string, arches map[string]bool, n Narrowing) string {
	b, _ := json.Marshal(struct {
		S      catalog.KubeletSettings
		Zones  map[string]string
		Arches map[string]bool
		N      Narrowing
	}{s, zones, arches, n})
	return string(b)
}

func (p *Provider) build(s catalog.KubeletSettings, zones map[string]string, arches map[string]bool, narrow Narrowing) []*cloudprovider.InstanceType {
	snap := p.snap
	zoneNames := slices.Sorted(maps.Keys(zones))
	out := make([]*cloudprovider.InstanceType, 0, len(snap.types))
	for _, t := range snap.types {
		if !arches[t.Arch] || narrow.Refuses(t) != "" {
			continue
		}
		var offerings cloudprovider.Offerings
		od, odOK := snap.onDemand[t.Name]
		for _, z := range zoneNames {
			if !snap.offered[z][t.Name] {
				continue
			}
			if t.OnDemandSupported && odOK {
				offerings = append(offerings, p.offering(t.Name, z, zones[z], cloudprovider.CapacityTypeOnDemand, od))
			}
			if sp, ok := snap.spot[zoneType{z, t.Name}]; ok && t.SpotSupported {
				offerings = append(offerings, p.offering(t.Name, z, zones[z], cloudprovider.CapacityTypeSpot, sp))
			}
		}
		if len(offerings) == 0 {
			continue
		}
		out = append(out, &cloudprovider.InstanceType{
			Name:      t.Name,
			Labels:    snap.labels[t.Name],
			Capacity:  t.Capacity(s),
			Overhead:  t.Overhead(s),
			Offerings: offerings,
		})
	}
	return out
}

func (p *Provider) offering(typ, zone, zoneID, ct string, price float64) cloudprovider.Offering {
	return cloudprovider.Offering{
		Zone: zone, ZoneID: zoneID, CapacityType: ct, Price: price,
		Available: !p.o.Unavailable.IsUnavailable(cloudprovider.OfferingKey{InstanceType: typ, Zone: zone, CapacityType: ct}),
	}
}

// Get returns one type of the current snapshot as the catalog models it
// (for launch-time decisions), or false.
func (p *Provider) Get(name string) (*catalog.Type, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snap == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(p.snap.types, name, func(t *catalog.Type, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return nil, false
	}
	return p.snap.types[i], true
}
