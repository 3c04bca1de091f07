package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// testdata/ec2 is a small subset of the EC2 data set (eleven types, four
// priced regions, three regions with zones, including Mac types to exclude and
// a retired type with a price), so the generator is tested without the full
// data set, which lives outside the repository.
const fixture = "testdata/ec2"

func generate(t *testing.T, dataDir string) (outDir, testdataDir string) {
	t.Helper()
	root := t.TempDir()
	outDir, testdataDir = filepath.Join(root, "data"), filepath.Join(root, "testdata")
	var log bytes.Buffer
	if err := run(dataDir, outDir, testdataDir, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "catalog: wrote") {
		t.Errorf("no progress reported:\n%s", log.String())
	}
	return outDir, testdataDir
}

func TestGenerateIsDeterministic(t *testing.T) {
	out1, td1 := generate(t, fixture)
	out2, td2 := generate(t, fixture)
	for _, f := range []struct{ a, b string }{
		{filepath.Join(out1, catalogFile), filepath.Join(out2, catalogFile)},
		{filepath.Join(out1, summaryFile), filepath.Join(out2, summaryFile)},
		{filepath.Join(td1, allocatableFile), filepath.Join(td2, allocatableFile)},
	} {
		a, err := os.ReadFile(f.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(f.b)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: two runs differ (%d vs %d bytes)", filepath.Base(f.a), len(a), len(b))
		}
	}
	// Regenerating over existing output leaves no temporary files behind.
	if err := run(fixture, out1, td1, io.Discard); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(out1)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{catalogFile, summaryFile}) {
		t.Errorf("output directory holds %v", names)
	}
}

func TestGeneratedCatalogContents(t *testing.T) {
	out, td := generate(t, fixture)
	data, err := os.ReadFile(filepath.Join(out, catalogFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ty := range c.Types() {
		names = append(names, ty.Name)
	}
	want := []string{"c7i-flex.large", "g6f.large", "inf2.xlarge", "m5.large", "m5d.large", "m7g.large", "p5.48xlarge", "p6-b300.48xlarge", "t3.micro"}
	if !slices.Equal(names, want) {
		t.Errorf("types %v, want %v (Mac types excluded)", names, want)
	}
	m5, _ := c.Type("m5.large")
	if m5.VCPU != 2 || m5.MemoryMiB != 8192 || m5.ENIMaxPods != 29 || m5.Arch != "amd64" || m5.BranchENIs != 9 {
		t.Errorf("m5.large = %+v", m5)
	}
	if p6, _ := c.Type("p6-b300.48xlarge"); p6.EFAInterfaces != 16 || p6.NetworkCards != 17 || len(p6.NetworkCardList) != 17 ||
		p6.NetworkCardList[0].BaselineMbps != 350000 || p6.NetworkCardList[1].BaselineMbps != 400000 {
		t.Errorf("p6-b300.48xlarge: %d EFA interfaces on %d cards (%+v), want 16 on 17 (card 0 is a slower ENA-only card)",
			p6.EFAInterfaces, p6.NetworkCards, p6.NetworkCardList[:2])
	}
	if p, ok := c.OnDemandPrice("us-east-1", "m7g.large"); !ok || p != 0.0816 {
		t.Errorf("m7g.large price %v %v", p, ok)
	}
	if _, ok := c.OnDemandPrice("us-east-1", "p3.2xlarge"); ok {
		t.Error("the retired p3.2xlarge must be dropped")
	}
	if got := c.Regions(); !slices.Equal(got, []string{"eu-west-1", "il-central-1", "us-east-1", "us-gov-west-1"}) {
		t.Errorf("regions %v", got)
	}
	if zs := c.Zones("us-east-1"); len(zs) != 6 || zs[0] != (catalog.Zone{Name: "us-east-1a", ID: "use1-az2"}) {
		t.Errorf("us-east-1 zones %v", zs)
	}
	summary, _ := os.ReadFile(filepath.Join(out, summaryFile))
	for _, s := range []string{"excluded types: 2", "mac1.metal", "mac2.metal", "p3.2xlarge", "us-gov-west-1: none in the data set"} {
		if !bytes.Contains(summary, []byte(s)) {
			t.Errorf("summary lacks %q:\n%s", s, summary)
		}
	}
	alloc, _ := os.ReadFile(filepath.Join(td, allocatableFile))
	if !bytes.Contains(alloc, []byte(`"m5.large": {"cpu":"1930m","ephemeralStorage":"17Gi","memory":"6903Mi","pods":29,"vpc.amazonaws.com/pod-eni":"9"}`)) {
		t.Errorf("allocatable reference:\n%s", alloc)
	}
	if bytes.Contains(alloc, []byte("mac")) {
		t.Error("allocatable reference lists excluded types")
	}
}

// copyFixture copies the fixture so a test can break one file.
func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(fixture, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGenerateReportsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		edit    func(string) string
		wantErr []string // all must appear in the error
	}{
		{"syntax error names file, line and column", typesFile,
			func(s string) string { return strings.Replace(s, `"vcpu":2,`, `"vcpu":2,,`, 1) },
			[]string{"instance-types.json:", "invalid character"}},
		{"wrong JSON type names the field", typesFile,
			func(s string) string { return strings.Replace(s, `"vcpu":2,`, `"vcpu":"two",`, 1) },
			[]string{"instance-types.json:", `"vcpu"`}},
		{"non-positive vCPU names the type and line", typesFile,
			func(s string) string {
				return strings.Replace(s, `"name":"m5.large","family":"m5","size":"large","generation":"previous","vcpu":2`, `"name":"m5.large","family":"m5","size":"large","generation":"previous","vcpu":0`, 1)
			},
			[]string{`instance-types.json:`, `type "m5.large"`, `"vcpu"`}},
		{"duplicate type", typesFile,
			func(s string) string {
				lines := strings.Split(s, "\n")
				return strings.Join(append(lines[:2], append([]string{lines[1]}, lines[2:]...)...), "\n")
			},
			[]string{"duplicate of the record on line 2"}},
		{"name not family.size", typesFile,
			func(s string) string { return strings.Replace(s, `"name":"t3.micro"`, `"name":"t3micro"`, 1) },
			[]string{`type "t3micro"`, "<family>.<size>"}},
		{"truncated file", typesFile,
			func(s string) string { return s[:len(s)/2] },
			[]string{"instance-types.json:", "unexpected end of file"}},
		{"max pods disagree with the VPC CNI list", maxPodsFile,
			func(s string) string { return strings.Replace(s, `"m5.large": 29`, `"m5.large": 30`, 1) },
			[]string{`type "m5.large"`, "max-pods.json", "30"}},
		{"price not a number", pricesFile,
			func(s string) string { return strings.Replace(s, `"m5.large": 0.096`, `"m5.large": "cheap"`, 1) },
			[]string{"on-demand-prices.json:"}},
		{"price with too many decimals", pricesFile,
			func(s string) string { return strings.Replace(s, `"m5.large": 0.096`, `"m5.large": 0.0960001`, 1) },
			[]string{"on-demand-prices.json", "us-east-1", "m5.large", "more than 6 decimals"}},
		{"card bandwidth not whole Mbps", typesFile,
			func(s string) string {
				return strings.Replace(s, `"baselineBandwidthGbps":0.75,`, `"baselineBandwidthGbps":0.7505,`, 1)
			},
			[]string{"instance-types.json:", "baselineBandwidthGbps", "Mbps"}},
		{"zone names and ids do not pair", offeringsFile,
			func(s string) string { return strings.Replace(s, `"use1-az6": [`, `"use1-az6": ["x1.fake",`, 1) },
			[]string{"instance-type-offerings.json", "us-east-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFixture(t)
			path := filepath.Join(dir, tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			edited := tt.edit(string(data))
			if edited == string(data) {
				t.Fatal("the edit did not change the fixture")
			}
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			err = run(dir, filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "td"), io.Discard)
			if err == nil {
				t.Fatal("run succeeded on bad input")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		dir := copyFixture(t)
		os.Remove(filepath.Join(dir, pricesFile))
		err := run(dir, t.TempDir(), t.TempDir(), io.Discard)
		if err == nil || !strings.Contains(err.Error(), pricesFile) {
			t.Errorf("error %v does not name %s", err, pricesFile)
		}
	})
}

func TestPairZones(t *testing.T) {
	tests := []struct {
		name          string
		byName, byID  map[string][]string
		want          []pairedZone
		wantAmbiguous int
		wantErr       bool
	}{
		{"unique lists pair by content",
			map[string][]string{"r-1a": {"a", "b"}, "r-1b": {"a"}, "r-1c": {"b", "c"}},
			map[string][]string{"r1-az1": {"a"}, "r1-az2": {"c", "b"}, "r1-az3": {"a", "b"}},
			[]pairedZone{{"r-1a", "r1-az3"}, {"r-1b", "r1-az1"}, {"r-1c", "r1-az2"}}, 0, false},
		{"identical lists pair in sorted order",
			map[string][]string{"r-1a": {"a"}, "r-1b": {"b"}, "r-1c": {"a"}},
			map[string][]string{"r1-az3": {"a"}, "r1-az2": {"b"}, "r1-az1": {"a"}},
			[]pairedZone{{"r-1a", "r1-az1"}, {"r-1b", "r1-az2"}, {"r-1c", "r1-az3"}}, 1, false},
		{"different counts", map[string][]string{"r-1a": {"a"}}, map[string][]string{}, nil, 0, true},
		{"no matching list", map[string][]string{"r-1a": {"a"}}, map[string][]string{"r1-az1": {"b"}}, nil, 0, true},
		{"no zones", nil, nil, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, amb, err := pairZones("r", tt.byName, tt.byID)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !slices.Equal(got, tt.want) || len(amb) != tt.wantAmbiguous {
				t.Errorf("got %v ambiguous %v, want %v", got, amb, tt.want)
			}
		})
	}
}

func TestMicroUSD(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0.096", 96000, false},
		{"0.0816", 81600, false},
		{"21.957642", 21957642, false},
		{"125.58182", 125581820, false},
		{"3", 3000000, false},
		{"0.0960000", 96000, false}, // trailing zeros are not extra precision
		{"0.0000001", 0, true},
		{"0", 0, true},
		{"-1", 0, true},
		{"1e3", 0, true},
		{"", 0, true},
		{".5", 0, true},
		{"1.2.3", 0, true},
		{"1234567890", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := microUSD(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("microUSD(%q) = %d, %v", tt.in, got, err)
			}
		})
	}
}

func TestFamilyScheme(t *testing.T) {
	tests := []struct{ name, category, generation string }{
		{"m5.large", "m", "5"},
		{"inf2.xlarge", "inf", "2"},
		{"u7i-12tb.224xlarge", "u", "7"},
		{"u-6tb1.56xlarge", "u", "1"},
		{"p6-b200.48xlarge", "p", "6"},
		{"c7i-flex.large", "c", "7"},
		{"x2iedn.metal", "x", "2"},
		{"hpc7g.16xlarge", "hpc", "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := familyScheme.FindStringSubmatch(tt.name)
			if m == nil || m[1] != tt.category || m[3] != tt.generation {
				t.Errorf("got %q", m)
			}
		})
	}
}
