package simulate_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestWriteJSONMatchesEncodingJSON: -o json prints exactly what
// json.MarshalIndent prints for the same Result.
func TestWriteJSONMatchesEncodingJSON(t *testing.T) {
	big := &simulate.Result{NodeClaims: []simulate.NodeClaim{}, ExistingNodes: []simulate.ExistingNode{}, Unschedulable: []simulate.Unschedulable{}}
	for i := range 50 {
		c := simulate.NodeClaim{Name: "p-" + strconv.Itoa(i), NodePool: "p", InstanceType: "m5.large", CapacityType: "spot", Zone: "z1",
			PricePerHour: float64(i) / 7, InstanceTypeOptions: []string{"m5.large", "m5.xlarge"}, Pods: []string{}}
		for j := range i {
			c.Pods = append(c.Pods, "ns/pod-"+strconv.Itoa(j))
		}
		big.NodeClaims = append(big.NodeClaims, c)
	}
	results := map[string]*simulate.Result{
		"empty lists": {NodeClaims: []simulate.NodeClaim{}, ExistingNodes: []simulate.ExistingNode{}, Unschedulable: []simulate.Unschedulable{}},
		"nil lists":   {NodeClaims: []simulate.NodeClaim{{Name: "a"}}, ExistingNodes: []simulate.ExistingNode{{Name: "n"}}},
		"odd strings and numbers": {
			NodeClaims: []simulate.NodeClaim{{Name: `q"uo\te`, NodePool: "<&>", InstanceType: "ü", CapacityType: "\x01\n\t\b\f\r\x7f\x1f", Zone: "\u2028\xff\u2029 é 日本 \xed\xa0\x80",
				InstanceTypeOptions: []string{""}, Pods: []string{"a/b"}, PricePerHour: 1e-7}},
			ExistingNodes:          []simulate.ExistingNode{{Name: "n", Pods: []string{"x/y", "x/z"}}},
			Unschedulable:          []simulate.Unschedulable{{Pod: "x/w", Code: "C", Reason: "nodepool \"a\": 3 < 4 & more"}},
			TotalPricePerHour:      1e21,
			LowerBoundPricePerHour: 123456.789,
			DurationSeconds:        -0.5,
		},
		"big": big,
		"static": {
			NodeClaims: []simulate.NodeClaim{{Name: "s-1", NodePool: "s", Static: true, Pods: []string{}}, {Name: "d-1", NodePool: "d", Pods: []string{"a/b"}}},
			StaticPools: []simulate.StaticPool{{NodePool: "s", Replicas: 3, Has: 1, Launched: 1, Limited: "limits.nodes 2",
				Removed: []simulate.StaticRemoval{{Name: "n", Rank: "Empty"}}}},
		},
	}
	for name, r := range results {
		t.Run(name, func(t *testing.T) {
			want, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			var got bytes.Buffer
			if err := simulate.Render(&got, r, simulate.FormatJSON); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("got\n%s\nwant\n%s", got.String(), want)
			}
		})
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		var out bytes.Buffer
		if err := simulate.Render(&out, &simulate.Result{TotalPricePerHour: f}, simulate.FormatJSON); err == nil {
			t.Errorf("total %v rendered without an error: %s", f, out.String())
		}
	}
}

// FuzzJSONString: any string in a plan is quoted as encoding/json quotes
// it.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a", `q"\`, "<&>", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xed\xa0\x80", "日本", "\b\f\n\r\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := &simulate.Result{Unschedulable: []simulate.Unschedulable{{Pod: s, Code: s, Reason: s}}}
		want, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := simulate.Render(&got, r, simulate.FormatJSON); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), append(want, '\n')) {
			t.Fatalf("%q: got\n%s\nwant\n%s", s, got.Bytes(), want)
		}
	})
}
