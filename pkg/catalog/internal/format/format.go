package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Magic starts every catalog file; its last byte is the format version.
const Magic = "DVTLCAT\x01"

// ErrCorrupt is wrapped by every Decode error.
var ErrCorrupt = errors.New("catalog data corrupt")

// File is the whole catalog as stored.
type File struct {
	// Types are sorted by name; their index is their identity in Regions.
	Types   []Type
	Regions []Region
}

// Type is one instance type as stored. See catalog.Type for field meanings.
type Type struct {
	Name, Family, Size, Category string
	Generation                   int
	Arch                         string
	VCPU, DefaultCores           int
	ThreadsPerCore               int
	MemoryMiB                    int64
	CPUManufacturer              string
	ClockSpeedMHz                int

	GPUCount        int
	GPUName         string
	GPUManufacturer string
	GPUMemoryMiB    int64

	AcceleratorKind         string // "" when the type has none
	AcceleratorCount        int
	AcceleratorName         string
	AcceleratorManufacturer string
	AcceleratorMemoryMiB    int64
	AcceleratorCores        int // cores per device (Neuron)

	LocalNVMeGiB         int
	InstanceStorageGB    int
	Hypervisor           string
	NetworkPerformance   string
	NetworkBandwidthMbps int
	NetworkCards         int
	MaxENIsAllCards      int
	MaxENIs              int // default network card
	IPv4PerENI           int
	IPv6PerENI           int
	BranchENIs           int
	EFAInterfaces        int
	EBSOptimizedSupport  string
	EBSBaselineMbps      int
	EBSMaximumMbps       int
	UsageClasses         []string

	// EC2 facts the local emulator serves in DescribeInstanceTypes.
	ENASupport, EBSNVMeSupport, NitroTPMSupport, InstanceStorageNVMe string
	MaxEBSAttachments, EBSBaselineIOPS, EBSMaximumIOPS               int
	DefaultNetworkCardIndex                                          int
	BootModes, VirtualizationTypes, RootDeviceTypes                  []string
	PlacementStrategies                                              []string
	Disks                                                            []Disk
	Cards                                                            []NetworkCard

	Flags Flags
}

// Disk is one kind of instance-store disk.
type Disk struct {
	Count, SizeGB int
	Type          string
}

// NetworkCard is one network card; bandwidths are in Mbps.
type NetworkCard struct {
	Index, MaxENIs, BaselineMbps, PeakMbps int
	Performance                            string
}

// Flags are the boolean facts of a type, packed into one varint.
type Flags uint64

// The flag bits. New bits may only be appended.
const (
	FlagCurrentGeneration Flags = 1 << iota
	FlagBareMetal
	FlagBurstable
	FlagEFA
	FlagTrunking
	FlagEncryptionInTransit
	FlagNitroEnclaves
	FlagIPv6
	FlagFreeTier
	FlagHibernation
	FlagDedicatedHosts
	FlagAutoRecovery
)

// Region holds one region's prices and zones.
type Region struct {
	Name   string
	Prices []Price // sorted by Type, unique
	Zones  []Zone  // sorted by Name
}

// Price is the on-demand price of one type, in micro-USD per hour.
type Price struct {
	Type     int
	MicroUSD int64
}

// Zone is one availability zone and the types offered in it.
type Zone struct {
	Name, ID string
	// Offered has bit i set when type i is offered in the zone.
	Offered Bitset
}

// Bitset is a set of type indices.
type Bitset []byte

// NewBitset returns an empty set able to hold n indices.
func NewBitset(n int) Bitset { return make(Bitset, (n+7)/8) }

// Set adds i to the set.
func (b Bitset) Set(i int) { b[i>>3] |= 1 << (uint(i) & 7) }

// Has reports whether i is in the set; indices out of range are not.
func (b Bitset) Has(i int) bool {
	return i >= 0 && i>>3 < len(b) && b[i>>3]&(1<<(uint(i)&7)) != 0
}

// Len counts the members.
func (b Bitset) Len() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount8(w)
	}
	return n
}

// Encode returns the binary form of f. It fails on values the format cannot
// hold (negative numbers, prices out of order, type indices out of range).
func Encode(f *File) ([]byte, error) {
	e := &encoder{index: map[string]int{}}
	// First pass: collect strings in order of first use, so the table and
	// therefore the output are deterministic.
	for i := range f.Types {
		t := &f.Types[i]
		for _, s := range typeStrings(t) {
			e.intern(*s)
		}
		for _, l := range typeStringLists(t) {
			for _, s := range *l {
				e.intern(s)
			}
		}
		for _, d := range t.Disks {
			e.intern(d.Type)
		}
		for _, c := range t.Cards {
			e.intern(c.Performance)
		}
	}
	for _, r := range f.Regions {
		e.intern(r.Name)
		for _, z := range r.Zones {
			e.intern(z.Name)
			e.intern(z.ID)
		}
	}
	out := []byte(Magic)
	out = binary.AppendUvarint(out, uint64(len(e.strings)))
	for _, s := range e.strings {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	out = binary.AppendUvarint(out, uint64(len(f.Types)))
	for i := range f.Types {
		t := &f.Types[i]
		for _, s := range typeStrings(t) {
			out = binary.AppendUvarint(out, uint64(e.index[*s]))
		}
		for j, v := range typeInts(t) {
			if v < 0 || v > maxInt {
				return nil, fmt.Errorf("type %q: integer field %d out of range (%d)", t.Name, j, v)
			}
			out = binary.AppendUvarint(out, uint64(v))
		}
		for _, l := range typeStringLists(t) {
			out = binary.AppendUvarint(out, uint64(len(*l)))
			for _, s := range *l {
				out = binary.AppendUvarint(out, uint64(e.index[s]))
			}
		}
		out = binary.AppendUvarint(out, uint64(len(t.Disks)))
		for _, d := range t.Disks {
			if d.Count < 0 || d.SizeGB < 0 || d.Count > maxInt || d.SizeGB > maxInt {
				return nil, fmt.Errorf("type %q: disk count or size out of range", t.Name)
			}
			out = binary.AppendUvarint(out, uint64(d.Count))
			out = binary.AppendUvarint(out, uint64(d.SizeGB))
			out = binary.AppendUvarint(out, uint64(e.index[d.Type]))
		}
		out = binary.AppendUvarint(out, uint64(len(t.Cards)))
		for _, c := range t.Cards {
			for _, v := range []int{c.Index, c.MaxENIs, c.BaselineMbps, c.PeakMbps} {
				if v < 0 || v > maxInt {
					return nil, fmt.Errorf("type %q: network card %d: value %d out of range", t.Name, c.Index, v)
				}
				out = binary.AppendUvarint(out, uint64(v))
			}
			out = binary.AppendUvarint(out, uint64(e.index[c.Performance]))
		}
		out = binary.AppendUvarint(out, uint64(t.Flags))
	}
	bitsetLen := (len(f.Types) + 7) / 8
	out = binary.AppendUvarint(out, uint64(len(f.Regions)))
	for _, r := range f.Regions {
		out = binary.AppendUvarint(out, uint64(e.index[r.Name]))
		out = binary.AppendUvarint(out, uint64(len(r.Prices)))
		prev := -1
		for _, p := range r.Prices {
			if p.Type <= prev || p.Type >= len(f.Types) {
				return nil, fmt.Errorf("region %s: price type index %d out of order or range", r.Name, p.Type)
			}
			if p.MicroUSD <= 0 {
				return nil, fmt.Errorf("region %s: type %s: price must be positive, got %d micro-USD", r.Name, f.Types[p.Type].Name, p.MicroUSD)
			}
			out = binary.AppendUvarint(out, uint64(p.Type-prev))
			out = binary.AppendUvarint(out, uint64(p.MicroUSD))
			prev = p.Type
		}
		out = binary.AppendUvarint(out, uint64(len(r.Zones)))
		for _, z := range r.Zones {
			if len(z.Offered) != bitsetLen {
				return nil, fmt.Errorf("region %s zone %s: bitset has %d bytes, want %d", r.Name, z.Name, len(z.Offered), bitsetLen)
			}
			out = binary.AppendUvarint(out, uint64(e.index[z.Name]))
			out = binary.AppendUvarint(out, uint64(e.index[z.ID]))
			out = append(out, z.Offered...)
		}
	}
	return out, nil
}

type encoder struct {
	strings []string
	index   map[string]int
}

func (e *encoder) intern(s string) {
	if _, ok := e.index[s]; !ok {
		e.index[s] = len(e.strings)
		e.strings = append(e.strings, s)
	}
}

// typeStrings and typeInts fix the field order of a Type on disk. Appending a
// field at the end of either list requires a new format version.
func typeStrings(t *Type) []*string {
	return []*string{
		&t.Name, &t.Family, &t.Size, &t.Category, &t.Arch, &t.CPUManufacturer,
		&t.GPUName, &t.GPUManufacturer,
		&t.AcceleratorKind, &t.AcceleratorName, &t.AcceleratorManufacturer,
		&t.Hypervisor, &t.NetworkPerformance, &t.EBSOptimizedSupport,
		&t.ENASupport, &t.EBSNVMeSupport, &t.NitroTPMSupport, &t.InstanceStorageNVMe,
	}
}

// typeStringLists fixes the order of the string-list fields on disk.
func typeStringLists(t *Type) []*[]string {
	return []*[]string{&t.UsageClasses, &t.BootModes, &t.VirtualizationTypes, &t.RootDeviceTypes, &t.PlacementStrategies}
}

// intFieldPtrs lists the int fields of a Type in their on-disk order; the
// three int64 fields follow them (see typeInts).
func intFieldPtrs(t *Type) []*int {
	return []*int{
		&t.Generation, &t.VCPU, &t.DefaultCores, &t.ThreadsPerCore, &t.ClockSpeedMHz,
		&t.GPUCount, &t.AcceleratorCount, &t.AcceleratorCores,
		&t.LocalNVMeGiB, &t.InstanceStorageGB, &t.NetworkBandwidthMbps, &t.NetworkCards,
		&t.MaxENIsAllCards, &t.MaxENIs, &t.IPv4PerENI, &t.IPv6PerENI, &t.BranchENIs,
		&t.EFAInterfaces, &t.EBSBaselineMbps, &t.EBSMaximumMbps,
		&t.MaxEBSAttachments, &t.EBSBaselineIOPS, &t.EBSMaximumIOPS, &t.DefaultNetworkCardIndex,
	}
}

func typeInts(t *Type) []int64 {
	ptrs := intFieldPtrs(t)
	out := make([]int64, 0, intFields)
	for _, p := range ptrs {
		out = append(out, int64(*p))
	}
	return append(out, t.MemoryMiB, t.GPUMemoryMiB, t.AcceleratorMemoryMiB)
}

// intFields is the number of integers typeInts returns.
const intFields = 27

func setTypeInts(t *Type, v []uint64) {
	ptrs := intFieldPtrs(t)
	for i, p := range ptrs {
		*p = int(v[i])
	}
	t.MemoryMiB = int64(v[len(ptrs)])
	t.GPUMemoryMiB = int64(v[len(ptrs)+1])
	t.AcceleratorMemoryMiB = int64(v[len(ptrs)+2])
}

// maxInt bounds decoded integers so that converting them to int never wraps.
const maxInt = 1 << 40

// Decode parses the output of Encode.
func Decode(data []byte) (*File, error) {
	d := &decoder{data: data}
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w: missing magic %q (wrong file or unsupported format version)", ErrCorrupt, Magic)
	}
	d.off = len(Magic)
	nStrings := d.count("string table size")
	strs := make([]string, 0, nStrings)
	for i := 0; i < nStrings && d.err == nil; i++ {
		n := d.count("string length")
		strs = append(strs, string(d.bytes(n, "string")))
	}
	str := func(what string) string {
		i := d.uvarint(what)
		if d.err == nil && i >= uint64(len(strs)) {
			d.fail(what, fmt.Errorf("string index %d out of range (table has %d)", i, len(strs)))
			return ""
		}
		if d.err != nil {
			return ""
		}
		return strs[i]
	}
	f := &File{}
	nTypes := d.count("type count")
	f.Types = make([]Type, nTypes)
	var ints [intFields]uint64
	for i := 0; i < nTypes && d.err == nil; i++ {
		t := &f.Types[i]
		for _, s := range typeStrings(t) {
			*s = str("type string field")
		}
		for j := range ints {
			ints[j] = d.uvarint("type integer field")
			if ints[j] > maxInt {
				d.fail("type integer field", fmt.Errorf("value %d too large", ints[j]))
			}
		}
		if d.err != nil {
			break
		}
		setTypeInts(t, ints[:])
		for _, l := range typeStringLists(t) {
			n := d.count("string list length")
			for j := 0; j < n && d.err == nil; j++ {
				*l = append(*l, str("string list entry"))
			}
		}
		nDisks := d.count("disk count")
		for j := 0; j < nDisks && d.err == nil; j++ {
			t.Disks = append(t.Disks, Disk{Count: d.int("disk count"), SizeGB: d.int("disk size"), Type: str("disk type")})
		}
		nCards := d.count("network card count")
		for j := 0; j < nCards && d.err == nil; j++ {
			c := NetworkCard{Index: d.int("card index"), MaxENIs: d.int("card ENIs"), BaselineMbps: d.int("card baseline"), PeakMbps: d.int("card peak")}
			c.Performance = str("card performance")
			t.Cards = append(t.Cards, c)
		}
		t.Flags = Flags(d.uvarint("type flags"))
	}
	bitsetLen := (nTypes + 7) / 8
	nRegions := d.count("region count")
	for i := 0; i < nRegions && d.err == nil; i++ {
		r := Region{Name: str("region name")}
		nPrices := d.count("price count")
		prev := -1
		for j := 0; j < nPrices && d.err == nil; j++ {
			delta := d.uvarint("price type delta")
			micro := d.uvarint("price")
			if d.err != nil {
				break
			}
			if delta == 0 || delta > uint64(nTypes) || prev+int(delta) >= nTypes {
				d.fail("price type delta", fmt.Errorf("type index out of range"))
				break
			}
			if micro == 0 || micro > maxInt {
				d.fail("price", fmt.Errorf("price %d micro-USD out of range", micro))
				break
			}
			prev += int(delta)
			r.Prices = append(r.Prices, Price{Type: prev, MicroUSD: int64(micro)})
		}
		nZones := d.count("zone count")
		for j := 0; j < nZones && d.err == nil; j++ {
			z := Zone{Name: str("zone name"), ID: str("zone id")}
			z.Offered = Bitset(d.bytes(bitsetLen, "zone bitset"))
			r.Zones = append(r.Zones, z)
		}
		f.Regions = append(f.Regions, r)
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(data) {
		return nil, fmt.Errorf("%w: %d trailing bytes at offset %d", ErrCorrupt, len(data)-d.off, d.off)
	}
	return f, nil
}

type decoder struct {
	data []byte
	off  int
	err  error
}

func (d *decoder) fail(what string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: offset %d: reading %s: %v", ErrCorrupt, d.off, what, err)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data[d.off:])
	if n <= 0 {
		d.fail(what, errors.New("truncated or overlong varint"))
		return 0
	}
	d.off += n
	return v
}

// int reads a varint bounded by maxInt.
func (d *decoder) int(what string) int {
	v := d.uvarint(what)
	if d.err == nil && v > maxInt {
		d.fail(what, fmt.Errorf("value %d too large", v))
		return 0
	}
	return int(v)
}

// count reads a length and checks it against the bytes left, so a corrupt
// length cannot make the decoder allocate without bound.
func (d *decoder) count(what string) int {
	v := d.uvarint(what)
	if d.err == nil && v > uint64(len(d.data)-d.off) {
		d.fail(what, fmt.Errorf("count %d exceeds the %d bytes left", v, len(d.data)-d.off))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.data)-d.off {
		d.fail(what, fmt.Errorf("need %d bytes, %d left", n, len(d.data)-d.off))
		return nil
	}
	b := d.data[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}
