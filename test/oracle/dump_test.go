package oracle_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
	"github.com/dovetail-sh/dovetail/test/oracle"
)

// TestWorkloadYAMLRoundTrips checks that a workload's manifests read back
// through `dovetail simulate`'s reader, so a failing seed can be replayed
// with the CLI. With ORACLE_DUMP=<seed> it also writes that workload to
// stdout.
func TestWorkloadYAMLRoundTrips(t *testing.T) {
	var zones []string
	for _, z := range catalog.Builtin().DefaultZones(region) {
		zones = append(zones, z.Name)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		w := oracle.Generate("w"+strconv.FormatUint(seed, 10), seed, zones)
		data, err := w.YAML()
		if err != nil {
			t.Fatal(err)
		}
		m := &simulate.Manifests{}
		if err := m.Read("w.yaml", data); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(m.Pods) != len(w.Pods) || len(m.NodePools) != len(w.NodePools) || len(m.DaemonSets) != len(w.DaemonSets) {
			t.Errorf("seed %d: read back %d pods %d pools %d daemonsets, want %d %d %d", seed,
				len(m.Pods), len(m.NodePools), len(m.DaemonSets), len(w.Pods), len(w.NodePools), len(w.DaemonSets))
		}
	}
	if s := os.Getenv("ORACLE_DUMP"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := oracle.Generate(fmt.Sprintf("w%03d", seed), seed, zones).YAML()
		os.Stdout.Write(data)
	}
}
