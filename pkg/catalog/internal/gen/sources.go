package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Raw input file names inside the -data directory.
const (
	typesFile       = "instance-types.json"
	pricesFile      = "on-demand-prices.json"
	offeringsFile   = "instance-type-offerings.json"
	maxPodsFile     = "max-pods.json"
	karpAllocFile   = "karpenter-allocatable.json"
	pricesMetaFile  = "on-demand-prices.meta.json"
	sourcesDocument = "SOURCES.md"
)

// rawType is the subset of an instance-types.json record the catalog uses.
// Absent numbers decode as zero and absent objects as nil, as in the file.
type rawType struct {
	Name                  string   `json:"name"`
	Family                string   `json:"family"`
	Size                  string   `json:"size"`
	Generation            string   `json:"generation"`
	VCPU                  int      `json:"vcpu"`
	DefaultCores          int      `json:"defaultCores"`
	DefaultThreadsPerCore int      `json:"defaultThreadsPerCore"`
	MemoryMiB             int64    `json:"memoryMiB"`
	Architectures         []string `json:"architectures"`
	ProcessorManufacturer string   `json:"processorManufacturer"`
	SustainedClockGHz     float64  `json:"sustainedClockSpeedGhz"`
	GPUs                  *struct {
		Count        int    `json:"count"`
		Manufacturer string `json:"manufacturer"`
		Name         string `json:"name"`
		MemoryMiB    int64  `json:"memoryMiB"`
	} `json:"gpus"`
	Accelerators *struct {
		Kind           string `json:"kind"`
		Count          int    `json:"count"`
		Name           string `json:"name"`
		MemoryMiB      int64  `json:"memoryMiB"`
		Manufacturer   string `json:"manufacturer"`
		CoresPerDevice int    `json:"coresPerDevice"`
	} `json:"accelerators"`
	LocalNVMeGiB    int `json:"localNvmeGiB"`
	InstanceStorage *struct {
		TotalSizeGB int `json:"totalSizeGB"`
		Disks       []struct {
			Count  int    `json:"count"`
			SizeGB int    `json:"sizeGB"`
			Type   string `json:"type"`
		} `json:"disks"`
		NVMeSupport string `json:"nvmeSupport"`
	} `json:"instanceStorage"`
	NetworkPerformance      string `json:"networkPerformance"`
	NetworkBandwidthMbps    int    `json:"networkBandwidthMbps"`
	MaxENIs                 int    `json:"maxENIs"`
	MaxENIsDefaultCard      int    `json:"maxENIsDefaultCard"`
	IPv4PerENI              int    `json:"ipv4PerENI"`
	IPv6PerENI              int    `json:"ipv6PerENI"`
	IPv6Supported           bool   `json:"ipv6Supported"`
	MaxNetworkCards         int    `json:"maxNetworkCards"`
	DefaultNetworkCardIndex int    `json:"defaultNetworkCardIndex"`
	NetworkCards            []struct {
		Index                 int     `json:"index"`
		MaxENIs               int     `json:"maxENIs"`
		BaselineBandwidthGbps float64 `json:"baselineBandwidthGbps"`
		PeakBandwidthGbps     float64 `json:"peakBandwidthGbps"`
		NetworkPerformance    string  `json:"networkPerformance"`
	} `json:"networkCards"`
	ENASupport                   string   `json:"enaSupport"`
	EBSNVMeSupport               string   `json:"ebsNvmeSupport"`
	NitroTPMSupport              string   `json:"nitroTpmSupport"`
	MaxEBSAttachments            int      `json:"maxEbsAttachments"`
	EBSBaselineIOPS              int      `json:"ebsBaselineIops"`
	EBSMaximumIOPS               int      `json:"ebsMaximumIops"`
	BootModes                    []string `json:"supportedBootModes"`
	VirtualizationTypes          []string `json:"supportedVirtualizationTypes"`
	RootDeviceTypes              []string `json:"supportedRootDeviceTypes"`
	PlacementStrategies          []string `json:"placementGroupStrategies"`
	DedicatedHostsSupported      bool     `json:"dedicatedHostsSupported"`
	AutoRecoverySupported        bool     `json:"autoRecoverySupported"`
	EFASupported                 bool     `json:"efaSupported"`
	EncryptionInTransitSupported bool     `json:"encryptionInTransitSupported"`
	TrunkingCompatible           bool     `json:"trunkingCompatible"`
	BranchENIs                   int      `json:"branchENIs"`
	Hypervisor                   string   `json:"hypervisor"`
	BareMetal                    bool     `json:"bareMetal"`
	Burstable                    bool     `json:"burstable"`
	SupportedUsageClasses        []string `json:"supportedUsageClasses"`
	EBSOptimizedSupport          string   `json:"ebsOptimizedSupport"`
	EBSBaselineBandwidthMbps     int      `json:"ebsBaselineBandwidthMbps"`
	EBSMaximumBandwidthMbps      int      `json:"ebsMaximumBandwidthMbps"`
	FreeTierEligible             bool     `json:"freeTierEligible"`
	HibernationSupported         bool     `json:"hibernationSupported"`
	NitroEnclavesSupport         string   `json:"nitroEnclavesSupport"`

	// line is the 1-based line of the record in instance-types.json.
	line int
}

// rawOfferings is instance-type-offerings.json.
type rawOfferings struct {
	Regions             map[string][]string            `json:"regions"`
	AvailabilityZones   map[string]map[string][]string `json:"availabilityZones"`
	AvailabilityZoneIDs map[string]map[string][]string `json:"availabilityZoneIds"`
}

// rawPriceMeta is one region of on-demand-prices.meta.json (only what the
// summary reports).
type rawPriceMeta struct {
	GeneratedAt        string `json:"generatedAt"`
	AWSPublicationDate string `json:"awsPublicationDate"`
}

type sources struct {
	types       []rawType
	prices      map[string]map[string]json.Number // region -> type -> USD/h
	priceMeta   map[string]rawPriceMeta
	offerings   rawOfferings
	maxPods     map[string]int
	allocatable map[string]map[string]json.RawMessage
}

func readSources(dir string) (*sources, error) {
	s := &sources{}
	var err error
	if s.types, err = readTypes(filepath.Join(dir, typesFile)); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, pricesFile), &s.prices); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, pricesMetaFile), &s.priceMeta); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, offeringsFile), &s.offerings); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, maxPodsFile), &s.maxPods); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, karpAllocFile), &s.allocatable); err != nil {
		return nil, err
	}
	return s, nil
}

// readJSON decodes a whole file, numbers as json.Number, and names the file,
// line and column of any error.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return positioned(path, data, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s:%s: unexpected data after the top-level value", filepath.Base(path), lineCol(data, dec.InputOffset()))
	}
	return nil
}

// readTypes decodes the instance-types.json array one record at a time so that
// each record remembers its line for later error messages.
func readTypes(path string) ([]rawType, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if err == nil {
			err = fmt.Errorf("expected a JSON array, found %v", tok)
		}
		return nil, positioned(path, data, dec.InputOffset(), err)
	}
	var out []rawType
	for dec.More() {
		start := dec.InputOffset()
		var t rawType
		if err := dec.Decode(&t); err != nil {
			return nil, positioned(path, data, dec.InputOffset(), err)
		}
		// InputOffset before Decode points at the preceding ',' or '['; the
		// record starts at the next non-space byte.
		start = skipSeparators(data, start)
		t.line = bytes.Count(data[:start], []byte("\n")) + 1
		out = append(out, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, positioned(path, data, dec.InputOffset(), err)
	}
	return out, nil
}

func skipSeparators(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',', '[':
			off++
		default:
			return off
		}
	}
	return off
}

// positioned turns a decoding error into "file:line:col: message", using the
// offset the error carries when it has one.
func positioned(path string, data []byte, off int64, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
		if typ.Field != "" {
			err = fmt.Errorf("field %q: cannot use JSON %s as %s", typ.Field, typ.Value, typ.Type)
		}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		off = int64(len(data))
		err = errors.New("unexpected end of file")
	}
	return fmt.Errorf("%s:%s: %w", filepath.Base(path), lineCol(data, off), err)
}

func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf("%d:%d", line, col)
}
