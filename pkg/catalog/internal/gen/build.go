package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/dovetail-sh/dovetail/pkg/catalog/internal/format"
)

// familyScheme splits a type name into category (the letters before the
// generation digit), an optional "-NNtb" memory marker of the u-* families,
// and the generation number: "m7g.large" -> m, 7; "u7i-12tb.224xlarge" -> u,
// 7; "inf2.xlarge" -> inf, 2; "p6-b200.48xlarge" -> p, 6.
var familyScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+)[^.]*\.`)

type output struct {
	catalog, summary, allocatable []byte
	types, regions                int
}

type exclusion struct{ name, reason string }

// build converts the raw sources into the generated files. It is
// deterministic: map iteration is always over sorted keys.
func build(src *sources) (*output, error) {
	f := &format.File{}
	var excluded []exclusion
	seen := map[string]int{}
	for i := range src.types {
		rt := &src.types[i]
		where := fmt.Sprintf("%s:%d: type %q", typesFile, rt.line, rt.Name)
		if prev, dup := seen[rt.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate of the record on line %d", where, prev)
		}
		seen[rt.Name] = rt.line
		t, reason, err := convertType(rt)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if reason != "" {
			excluded = append(excluded, exclusion{rt.Name, reason})
			continue
		}
		if want, ok := src.maxPods[rt.Name]; ok {
			if got := eniMaxPods(t.MaxENIs, t.IPv4PerENI); got != want {
				return nil, fmt.Errorf("%s: ENI max pods %d (from maxENIsDefaultCard %d, ipv4PerENI %d) disagrees with %s, which lists %d",
					where, got, t.MaxENIs, t.IPv4PerENI, maxPodsFile, want)
			}
		}
		f.Types = append(f.Types, t)
	}
	sort.Slice(f.Types, func(i, j int) bool { return f.Types[i].Name < f.Types[j].Name })
	index := make(map[string]int, len(f.Types))
	for i, t := range f.Types {
		index[t.Name] = i
	}

	regionNames := sortedKeys(src.prices)
	for r := range src.offerings.AvailabilityZones {
		if _, ok := src.prices[r]; !ok {
			regionNames = append(regionNames, r)
		}
	}
	slices.Sort(regionNames)

	sum := &summary{droppedPrices: map[string][]string{}}
	for _, rn := range regionNames {
		r := format.Region{Name: rn}
		prices := src.prices[rn]
		for _, tn := range sortedKeys(prices) {
			i, ok := index[tn]
			if !ok {
				sum.droppedPrices[rn] = append(sum.droppedPrices[rn], tn)
				continue
			}
			micro, err := microUSD(string(prices[tn]))
			if err != nil {
				return nil, fmt.Errorf("%s: region %s: type %s: %w", pricesFile, rn, tn, err)
			}
			r.Prices = append(r.Prices, format.Price{Type: i, MicroUSD: micro})
		}
		sort.Slice(r.Prices, func(i, j int) bool { return r.Prices[i].Type < r.Prices[j].Type })
		zones, ambiguous, err := pairZones(rn, src.offerings.AvailabilityZones[rn], src.offerings.AvailabilityZoneIDs[rn])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", offeringsFile, err)
		}
		sum.ambiguous = append(sum.ambiguous, ambiguous...)
		for _, z := range zones {
			bs := format.NewBitset(len(f.Types))
			for _, tn := range src.offerings.AvailabilityZones[rn][z.name] {
				if i, ok := index[tn]; ok {
					bs.Set(i)
				}
			}
			r.Zones = append(r.Zones, format.Zone{Name: z.name, ID: z.id, Offered: bs})
		}
		f.Regions = append(f.Regions, r)
	}

	catalog, err := format.Encode(f)
	if err != nil {
		return nil, err
	}
	alloc, err := allocatableReference(src.allocatable, index)
	if err != nil {
		return nil, err
	}
	sum.excluded = excluded
	return &output{
		catalog:     catalog,
		summary:     sum.render(f, src),
		allocatable: alloc,
		types:       len(f.Types),
		regions:     len(f.Regions),
	}, nil
}

// convertType maps one raw record to its stored form. A non-empty reason
// means the type is deliberately left out of the catalog.
func convertType(rt *rawType) (t format.Type, reason string, err error) {
	arch := ""
	for _, a := range rt.Architectures {
		switch a {
		case "arm64_mac", "x86_64_mac":
			return t, fmt.Sprintf("architectures %v: Mac instances cannot run EKS Linux nodes", rt.Architectures), nil
		case "arm64":
			arch = "arm64"
		case "x86_64":
			if arch == "" {
				arch = "amd64"
			}
		}
	}
	if arch == "" {
		return t, fmt.Sprintf("architectures %v: neither x86_64 nor arm64", rt.Architectures), nil
	}
	family, size, ok := strings.Cut(rt.Name, ".")
	if !ok || family == "" || size == "" || strings.Contains(size, ".") {
		return t, "", fmt.Errorf("name is not <family>.<size>")
	}
	if rt.Family != family || rt.Size != size {
		return t, "", fmt.Errorf("family %q / size %q disagree with the name", rt.Family, rt.Size)
	}
	m := familyScheme.FindStringSubmatch(rt.Name)
	if m == nil {
		return t, "", fmt.Errorf("name does not start with <category letters><generation digits>")
	}
	var generation int
	fmt.Sscan(m[3], &generation)
	switch {
	case rt.VCPU <= 0:
		return t, "", fmt.Errorf("field \"vcpu\": must be positive, got %d", rt.VCPU)
	case rt.MemoryMiB <= 0:
		return t, "", fmt.Errorf("field \"memoryMiB\": must be positive, got %d", rt.MemoryMiB)
	case rt.MaxENIsDefaultCard <= 0:
		return t, "", fmt.Errorf("field \"maxENIsDefaultCard\": must be positive, got %d", rt.MaxENIsDefaultCard)
	case rt.IPv4PerENI <= 0:
		return t, "", fmt.Errorf("field \"ipv4PerENI\": must be positive, got %d", rt.IPv4PerENI)
	case rt.Generation != "current" && rt.Generation != "previous":
		return t, "", fmt.Errorf("field \"generation\": want \"current\" or \"previous\", got %q", rt.Generation)
	}
	t = format.Type{
		Name:                 rt.Name,
		Family:               family,
		Size:                 size,
		Category:             m[1],
		Generation:           generation,
		Arch:                 arch,
		VCPU:                 rt.VCPU,
		DefaultCores:         rt.DefaultCores,
		ThreadsPerCore:       rt.DefaultThreadsPerCore,
		MemoryMiB:            rt.MemoryMiB,
		CPUManufacturer:      kebab(rt.ProcessorManufacturer),
		ClockSpeedMHz:        int(math.Round(rt.SustainedClockGHz * 1000)),
		LocalNVMeGiB:         rt.LocalNVMeGiB,
		Hypervisor:           rt.Hypervisor,
		NetworkPerformance:   rt.NetworkPerformance,
		NetworkBandwidthMbps: rt.NetworkBandwidthMbps,
		NetworkCards:         rt.MaxNetworkCards,
		MaxENIsAllCards:      rt.MaxENIs,
		MaxENIs:              rt.MaxENIsDefaultCard,
		IPv4PerENI:           rt.IPv4PerENI,
		IPv6PerENI:           rt.IPv6PerENI,
		EBSOptimizedSupport:  rt.EBSOptimizedSupport,
		EBSBaselineMbps:      rt.EBSBaselineBandwidthMbps,
		EBSMaximumMbps:       rt.EBSMaximumBandwidthMbps,
		UsageClasses:         slices.Sorted(slices.Values(rt.SupportedUsageClasses)),

		ENASupport:              rt.ENASupport,
		EBSNVMeSupport:          rt.EBSNVMeSupport,
		NitroTPMSupport:         rt.NitroTPMSupport,
		MaxEBSAttachments:       rt.MaxEBSAttachments,
		EBSBaselineIOPS:         rt.EBSBaselineIOPS,
		EBSMaximumIOPS:          rt.EBSMaximumIOPS,
		DefaultNetworkCardIndex: rt.DefaultNetworkCardIndex,
		BootModes:               slices.Sorted(slices.Values(rt.BootModes)),
		VirtualizationTypes:     slices.Sorted(slices.Values(rt.VirtualizationTypes)),
		RootDeviceTypes:         slices.Sorted(slices.Values(rt.RootDeviceTypes)),
		PlacementStrategies:     slices.Sorted(slices.Values(rt.PlacementStrategies)),
	}
	if rt.InstanceStorage != nil {
		t.InstanceStorageGB = rt.InstanceStorage.TotalSizeGB
		t.InstanceStorageNVMe = rt.InstanceStorage.NVMeSupport
		for _, d := range rt.InstanceStorage.Disks {
			t.Disks = append(t.Disks, format.Disk{Count: d.Count, SizeGB: d.SizeGB, Type: d.Type})
		}
	}
	for _, c := range rt.NetworkCards {
		base, err := wholeMbps(c.BaselineBandwidthGbps)
		if err != nil {
			return t, "", fmt.Errorf("network card %d: baselineBandwidthGbps: %w", c.Index, err)
		}
		peak, err := wholeMbps(c.PeakBandwidthGbps)
		if err != nil {
			return t, "", fmt.Errorf("network card %d: peakBandwidthGbps: %w", c.Index, err)
		}
		t.Cards = append(t.Cards, format.NetworkCard{Index: c.Index, MaxENIs: c.MaxENIs, BaselineMbps: base, PeakMbps: peak, Performance: c.NetworkPerformance})
	}
	if g := rt.GPUs; g != nil {
		t.GPUCount, t.GPUName, t.GPUManufacturer, t.GPUMemoryMiB = g.Count, g.Name, g.Manufacturer, g.MemoryMiB
	}
	if a := rt.Accelerators; a != nil {
		if a.Kind == "" {
			return t, "", fmt.Errorf("field \"accelerators.kind\": missing")
		}
		t.AcceleratorKind, t.AcceleratorCount, t.AcceleratorName = a.Kind, a.Count, a.Name
		t.AcceleratorManufacturer, t.AcceleratorMemoryMiB, t.AcceleratorCores = a.Manufacturer, a.MemoryMiB, a.CoresPerDevice
	}
	if rt.TrunkingCompatible {
		t.Flags |= format.FlagTrunking
		t.BranchENIs = rt.BranchENIs
	}
	if rt.EFASupported {
		t.Flags |= format.FlagEFA
		t.EFAInterfaces = efaInterfaces(rt)
	}
	for _, fl := range []struct {
		on   bool
		flag format.Flags
	}{
		{rt.Generation == "current", format.FlagCurrentGeneration},
		{rt.BareMetal, format.FlagBareMetal},
		{rt.Burstable, format.FlagBurstable},
		{rt.EncryptionInTransitSupported, format.FlagEncryptionInTransit},
		{rt.NitroEnclavesSupport == "supported", format.FlagNitroEnclaves},
		{rt.IPv6Supported, format.FlagIPv6},
		{rt.FreeTierEligible, format.FlagFreeTier},
		{rt.HibernationSupported, format.FlagHibernation},
		{rt.DedicatedHostsSupported, format.FlagDedicatedHosts},
		{rt.AutoRecoverySupported, format.FlagAutoRecovery},
	} {
		if fl.on {
			t.Flags |= fl.flag
		}
	}
	return t, "", nil
}

// efaInterfaces estimates EC2's MaximumEfaInterfaces, which the data set does
// not carry. Every network card of an EFA type carries one EFA interface,
// except that a card slower than the type's fastest cards is an ENA-only
// primary card (p6-b300.48xlarge: one 350 Gbps card and sixteen 400 Gbps EFA
// cards). The figures Karpenter documents agree for every EFA type.
func efaInterfaces(rt *rawType) int {
	if len(rt.NetworkCards) == 0 {
		return rt.MaxNetworkCards
	}
	fastest := 0.0
	for _, c := range rt.NetworkCards {
		fastest = max(fastest, c.BaselineBandwidthGbps)
	}
	n := 0
	for _, c := range rt.NetworkCards {
		if c.BaselineBandwidthGbps == fastest {
			n++
		}
	}
	return n
}

// wholeMbps converts Gbps to Mbps, which must come out whole so that it is
// stored exactly.
func wholeMbps(gbps float64) (int, error) {
	mbps := math.Round(gbps * 1000)
	if gbps < 0 || math.Abs(mbps-gbps*1000) > 1e-6 {
		return 0, fmt.Errorf("%v Gbps is not a whole number of Mbps", gbps)
	}
	return int(mbps), nil
}

func eniMaxPods(enis, ipv4PerENI int) int { return enis*(ipv4PerENI-1) + 2 }

// kebab lower-cases s and replaces spaces by dashes, the form Karpenter uses
// for label values derived from EC2 names ("Radeon Pro V520" ->
// "radeon-pro-v520").
func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// microUSD converts a decimal price string to integer micro-dollars exactly,
// without a detour through floating point.
func microUSD(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return 0, fmt.Errorf("price %q: want a plain decimal number of USD", s)
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 6 {
		return 0, fmt.Errorf("price %q: more than 6 decimals cannot be stored exactly", s)
	}
	if len(whole) > 9 {
		return 0, fmt.Errorf("price %q: too large", s)
	}
	var v int64
	for _, c := range whole + frac + strings.Repeat("0", 6-len(frac)) {
		v = v*10 + int64(c-'0')
	}
	if v == 0 {
		return 0, fmt.Errorf("price %q: must be positive", s)
	}
	return v, nil
}

type pairedZone struct{ name, id string }

// pairZones matches zone names to zone ids. The data set lists the offered
// types per zone name and, separately, per zone id; a name and an id are the
// same zone when they offer exactly the same types. Where several zones offer
// identical lists the data cannot tell them apart, and the generator pairs
// that group's names and ids in sorted order (reported in the summary).
func pairZones(region string, byName, byID map[string][]string) ([]pairedZone, []string, error) {
	if len(byName) != len(byID) {
		return nil, nil, fmt.Errorf("region %s: %d zone names but %d zone ids", region, len(byName), len(byID))
	}
	key := func(types []string) string { return strings.Join(slices.Sorted(slices.Values(types)), ",") }
	names, ids := map[string][]string{}, map[string][]string{}
	for _, n := range sortedKeys(byName) {
		names[key(byName[n])] = append(names[key(byName[n])], n)
	}
	for _, id := range sortedKeys(byID) {
		ids[key(byID[id])] = append(ids[key(byID[id])], id)
	}
	var out []pairedZone
	var ambiguous []string
	for _, k := range sortedKeys(names) {
		ns, is := names[k], ids[k]
		if len(ns) != len(is) {
			return nil, nil, fmt.Errorf("region %s: zones %v offer a type list that zone ids %v do not match one to one", region, ns, is)
		}
		if len(ns) > 1 {
			ambiguous = append(ambiguous, fmt.Sprintf("%s: %v <-> %v", region, ns, is))
		}
		for i := range ns {
			out = append(out, pairedZone{ns[i], is[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, ambiguous, nil
}

// allocatableReference renders the Karpenter documentation's allocatable
// figures for the catalog's types, one type per line, keys sorted.
func allocatableReference(raw map[string]map[string]json.RawMessage, index map[string]int) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	names := sortedKeys(raw)
	first := true
	for _, n := range names {
		if _, ok := index[n]; !ok {
			continue
		}
		line, err := json.Marshal(raw[n]) // sorted keys, compact values
		if err != nil {
			return nil, fmt.Errorf("%s: type %s: %w", karpAllocFile, n, err)
		}
		if !first {
			b.WriteString(",\n")
		}
		first = false
		fmt.Fprintf(&b, "%q: %s", n, line)
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
