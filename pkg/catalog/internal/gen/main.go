package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	var dataDir, outDir, testdataDir string
	flag.StringVar(&dataDir, "data", "", "directory holding the raw EC2 data files (required)")
	flag.StringVar(&outDir, "out", "", "output directory for catalog.bin and summary.txt (required)")
	flag.StringVar(&testdataDir, "testdata", "", "output directory for the allocatable reference (default: <out>/../testdata)")
	flag.Parse()
	if dataDir == "" || outDir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: gen -data <dir> -out <dir> [-testdata <dir>]")
		os.Exit(2)
	}
	if testdataDir == "" {
		testdataDir = filepath.Join(outDir, "..", "testdata")
	}
	if err := run(dataDir, outDir, testdataDir, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// Output file names.
const (
	catalogFile     = "catalog.bin"
	summaryFile     = "summary.txt"
	allocatableFile = "karpenter-allocatable.json"
)

// run reads the raw data in dataDir and writes the generated files.
func run(dataDir, outDir, testdataDir string, log io.Writer) error {
	fmt.Fprintf(log, "catalog: reading %s\n", dataDir)
	src, err := readSources(dataDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "catalog: building from %d instance types, %d priced regions, %d regions with zones\n",
		len(src.types), len(src.prices), len(src.offerings.AvailabilityZones))
	built, err := build(src)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		dir, name string
		data      []byte
	}{
		{outDir, catalogFile, built.catalog},
		{outDir, summaryFile, built.summary},
		{testdataDir, allocatableFile, built.allocatable},
	} {
		if err := writeFile(filepath.Join(f.dir, f.name), f.data); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "catalog: wrote %s (%d types, %d regions, %d bytes), %s, %s\n",
		filepath.Join(outDir, catalogFile), built.types, built.regions, len(built.catalog),
		filepath.Join(outDir, summaryFile), filepath.Join(testdataDir, allocatableFile))
	return nil
}

// writeFile replaces path atomically, so an interrupted run never leaves a
// half-written catalog behind.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
