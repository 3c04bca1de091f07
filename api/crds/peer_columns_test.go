package crds_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dovetail-sh/dovetail/api/internal/peercrds"
)

// TestNamesMatchThePeers checks that each CRD is served under the peer's
// group, version, scope and names (kind, plural, singular, short names,
// categories), so `kubectl get overlays`, `kubectl get cb` and `kubectl
// get karpenter` answer as with the peer.
func TestNamesMatchThePeers(t *testing.T) {
	peer, ours := bothCRDs(t)
	if len(ours) != len(peercrds.Files) {
		t.Errorf("%d CRDs embedded, the peer installs %d", len(ours), len(peercrds.Files))
	}
	for _, name := range peercrds.Files {
		ps := crdDoc(t, "peer "+name, peer[name])["spec"].(schemaNode)
		os := crdDoc(t, name, ours[name])["spec"].(schemaNode)
		for _, k := range []string{"group", "scope"} {
			if ps[k] != os[k] {
				t.Errorf("%s: %s %v, ours %v", name, k, ps[k], os[k])
			}
		}
		pn, on := ps["names"].(schemaNode), os["names"].(schemaNode)
		for _, k := range []string{"kind", "listKind", "plural", "singular", "shortNames", "categories"} {
			if fmt.Sprint(pn[k]) != fmt.Sprint(on[k]) {
				t.Errorf("%s: names.%s %v, ours %v", name, k, pn[k], on[k])
			}
		}
	}
}

// column is what kubectl shows of a printer column: the description is
// left out (ours are written independently).
type column struct {
	name, typ, jsonPath, format string
	priority                    int64
}

func columns(v schemaNode) []column {
	var out []column
	l, _ := v["additionalPrinterColumns"].([]any)
	for _, c := range l {
		m := c.(schemaNode)
		col := column{name: fmt.Sprint(m["name"]), typ: fmt.Sprint(m["type"]), jsonPath: fmt.Sprint(m["jsonPath"])}
		if f, ok := m["format"].(string); ok {
			col.format = f
		}
		if p, ok := m["priority"].(float64); ok {
			col.priority = int64(p)
		}
		out = append(out, col)
	}
	return out
}

// TestPrinterColumnsMatchThePeers checks that every CRD's printer columns
// are the peer's, in the peer's order with the peer's names, types, paths
// and priorities, so `kubectl get` and `kubectl get -o wide` print the same
// table (nodeclaims -o wide has IMAGEID and DRIFTED, for example). A column
// removed, added, renamed or moved fails.
func TestPrinterColumnsMatchThePeers(t *testing.T) {
	peer, ours := bothCRDs(t)
	for _, name := range peercrds.Files {
		pc := columns(storageVersion(t, "peer "+name, peer[name]))
		oc := columns(storageVersion(t, name, ours[name]))
		if len(pc) == 0 {
			t.Fatalf("the peer's %s has no printer columns: the fetch is wrong", name)
		}
		if !slices.Equal(pc, oc) {
			t.Errorf("%s printer columns differ from the peer's %s:\n  peer %+v\n  ours %+v", name, peerVersion, pc, oc)
		}
	}
}
